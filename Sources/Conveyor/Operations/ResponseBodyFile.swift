import ConveyorLocking
import Foundation

/// A file that response body chunks are appended to as they arrive, so a download never
/// accumulates in memory.
final class ResponseBodyFile: Sendable {
    /// The partial file being written.
    let url: URL
    private struct State {
        /// Written inside the lock; closed by the one caller that takes it out.
        var handle: LockedReference<FileHandle>?
        /// Chunks not yet written: URLSession delivers 16–64 kB at a time, and a system call
        /// per chunk cost a 50 MB download to a file 10% against `download(for:)`.
        var pending = Data()
    }

    /// Bytes gathered before one write.
    static let writeSize = 512 * 1024
    // Only the transport's serial delegate queue writes; the Mutex makes the hand-over to the
    // processing queue (which closes the file) explicit.
    private let state: Lock<State>

    /// Creates (or truncates) the file, or opens it for appending.
    /// - Parameters:
    ///   - url: The partial file.
    ///   - appending: Continue an existing file (a resumed download) instead of truncating it.
    /// - Throws: ``ConveyorError/downloadFailed(reason:)`` with `.cannotCreateFile`.
    init(url: URL, appending: Bool = false) throws {
        self.url = url
        if !appending || !FileManager.default.fileExists(atPath: url.path) {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw ConveyorError.downloadFailed(reason: .cannotCreateFile(url, CocoaError(.fileWriteNoPermission)))
            }
        }
        do {
            let handle = try FileHandle(forWritingTo: url)
            if appending { try handle.seekToEnd() }
            state = Lock(State(handle: LockedReference(handle)))
        } catch {
            throw ConveyorError.downloadFailed(reason: .cannotCreateFile(url, error))
        }
    }

    /// Appends a chunk.
    /// - Throws: ``ConveyorError/downloadFailed(reason:)`` with `.writeFailed` (disk full, I/O).
    func write(_ data: Data) throws {
        try state.withLock { state in
            guard state.handle != nil else { return }
            state.pending.append(data)
            if state.pending.count >= Self.writeSize { try flush(&state) }
        }
    }

    /// Writes the gathered chunks.
    private func flush(_ state: inout State) throws {
        guard let handle = state.handle?.value, !state.pending.isEmpty else { return }
        defer { state.pending.removeAll(keepingCapacity: true) }
        do {
            try handle.write(contentsOf: state.pending)
        } catch {
            throw ConveyorError.downloadFailed(reason: .writeFailed(url, error))
        }
    }

    /// Closes the file. No fsync: a download is complete once its bytes are in the file
    /// system (as for browsers and curl); forcing 300 MB to the platter added 0.6 s here.
    /// - Throws: ``ConveyorError/downloadFailed(reason:)`` when closing reports a deferred write error.
    func close() throws {
        let (handle, flushError) = state.withLock { state -> (FileHandle?, (any Error)?) in
            defer {
                state.handle = nil
                state.pending = Data()
            }
            do {
                try flush(&state)
                return (state.handle?.value, nil)
            } catch {
                return (state.handle?.value, error)
            }
        }
        do {
            try handle?.close()
        } catch {
            throw ConveyorError.downloadFailed(reason: .writeFailed(url, error))
        }
        if let flushError { throw flushError }
    }

    /// Closes and removes the partial file (what was not written yet is dropped, unwritten).
    func discard() {
        let handle = state.withLock { state -> FileHandle? in
            defer {
                state.handle = nil
                state.pending = Data()
            }
            return state.handle?.value
        }
        try? handle?.close()
        try? FileManager.default.removeItem(at: url)
    }
}

import Foundation
import ConveyorLocking

/// A file that response body chunks are appended to as they arrive, so a download never
/// accumulates in memory.
final class ResponseBodyFile: Sendable {
    /// The partial file being written.
    let url: URL
    private struct State {
        var handle: UncheckedSendableBox<FileHandle>?
        var bytesWritten: Int64 = 0
    }
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
            let end = appending ? try handle.seekToEnd() : 0
            state = Lock(State(handle: UncheckedSendableBox(value: handle), bytesWritten: Int64(end)))
        } catch {
            throw ConveyorError.downloadFailed(reason: .cannotCreateFile(url, error))
        }
    }

    var bytesWritten: Int64 { state.withLock { $0.bytesWritten } }

    /// Appends a chunk.
    /// - Throws: ``ConveyorError/downloadFailed(reason:)`` with `.writeFailed` (disk full, I/O).
    func write(_ data: Data) throws {
        try state.withLock { state in
            guard let handle = state.handle?.value else { return }
            do {
                try handle.write(contentsOf: data)
            } catch {
                throw ConveyorError.downloadFailed(reason: .writeFailed(url, error))
            }
            state.bytesWritten += Int64(data.count)
        }
    }

    /// Closes the file. No fsync: a download is complete once its bytes are in the file
    /// system (as for browsers and curl); forcing 300 MB to the platter added 0.6 s here.
    /// - Throws: ``ConveyorError/downloadFailed(reason:)`` when closing reports a deferred write error.
    func close() throws {
        let handle = state.withLock { state -> FileHandle? in
            defer { state.handle = nil }
            return state.handle?.value
        }
        do {
            try handle?.close()
        } catch {
            throw ConveyorError.downloadFailed(reason: .writeFailed(url, error))
        }
    }

    /// Closes and removes the partial file.
    func discard() {
        try? close()
        try? FileManager.default.removeItem(at: url)
    }
}

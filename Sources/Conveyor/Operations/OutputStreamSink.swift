import ConveyorLocking
import Foundation

/// Writes response body bytes to a caller's `OutputStream` (AFNetworking's `outputStream`) as
/// they arrive, handling short writes, and reports a stream that refuses bytes as
/// ``ConveyorError/outputStreamFailed(reason:)``.
final class OutputStreamSink: Sendable {
    // Sendable: the stream is touched only behind `state`'s lock — the transport's thread
    // writes, and whoever finishes the operation (a cancel from any thread) closes it.
    private struct State {
        /// Used only inside the lock (see above).
        let stream: LockedReference<OutputStream>
        var opened = false
        var closed = false
        var bytesWritten: Int64 = 0
    }
    private let state: Lock<State>

    init(_ stream: OutputStream) {
        state = Lock(State(stream: LockedReference(stream)))
    }

    /// The stream the caller gave.
    var stream: OutputStream { state.withLock { $0.stream.value } }

    /// Bytes the stream has accepted so far.
    var bytesWritten: Int64 { state.withLock { $0.bytesWritten } }

    /// Opens the stream the first time a body starts (AFNetworking opened it then too); a
    /// stream the caller opened already is used as it is.
    func open() throws(ConveyorError) {
        try state.withLock { (state: inout State) throws(ConveyorError) in
            // Closed first (the operation finished before its body began): stays closed.
            guard !state.opened, !state.closed else { return }
            state.opened = true
            let stream = state.stream.value
            if stream.streamStatus == .notOpen { stream.open() }
            switch stream.streamStatus {
            case .open, .writing: return
            default: throw .outputStreamFailed(reason: .cannotOpen(Self.error(of: stream)))
            }
        }
    }

    /// Writes all of `data`, looping over short writes.
    func write(_ data: Data) throws(ConveyorError) {
        try state.withLock { (state: inout State) throws(ConveyorError) in
            let stream = state.stream.value
            guard !state.closed else { throw .outputStreamFailed(reason: .writeFailed(bytesWritten: state.bytesWritten, nil)) }
            var written = 0
            let count = data.count
            data.withUnsafeBytes { raw in
                guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return }
                while written < count {
                    let result = stream.write(base + written, maxLength: count - written)
                    // 0: a fixed-capacity stream is full; -1: an error (a full disk, a closed stream).
                    guard result > 0 else { return }
                    written += result
                }
            }
            state.bytesWritten += Int64(written)
            if written < count {
                throw .outputStreamFailed(reason: .writeFailed(bytesWritten: state.bytesWritten, Self.error(of: stream)))
            }
        }
    }

    /// Closes the stream if it is open — whoever opened it: this sink when the body began, or
    /// the caller before (AFNetworking closed the stream however the operation ended); later
    /// opens do nothing and later writes fail. A stream never opened is left as it is.
    func close() {
        let stream = state.withLock { state -> OutputStream? in
            guard !state.closed else { return nil }
            state.closed = true
            let stream = state.stream.value
            return state.opened || stream.streamStatus != .notOpen ? stream : nil
        }
        stream?.close()
    }

    /// What a memory stream (`OutputStream.toMemory()`) holds; nil for other streams.
    var memoryContents: Data? {
        state.withLock { $0.stream.value.property(forKey: .dataWrittenToMemoryStreamKey) as? Data }
    }

    /// The stream's error, read only when its status says there is one: corelibs traps on
    /// `streamError` of a stream without an error.
    private static func error(of stream: OutputStream) -> (any Error)? {
        stream.streamStatus == .error ? stream.streamError : nil
    }
}

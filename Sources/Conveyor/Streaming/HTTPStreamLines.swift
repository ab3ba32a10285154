import Foundation

/// An ``HTTPStream``'s body as text lines (UTF-8), split at CRLF, LF or a lone CR; a CR at the
/// end of one chunk and an LF at the start of the next are one line end.
public struct HTTPStreamLines: AsyncSequence, Sendable {
    /// A line, without its line end.
    public typealias Element = String

    let stream: HTTPStream
    /// The longest line accepted, in bytes without its line end.
    public let maximumLength: Int

    /// Iterates the lines.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var chunks: HTTPStream.AsyncIterator
        var splitter: LineSplitter
        var ready: [String] = []
        /// Thrown once `ready` is empty: the lines before a too-long one are delivered first.
        var pendingError: ConveyorError?
        var finished = false

        /// The next line; nil after the last one.
        /// - Throws: ``ConveyorError`` when the transfer failed or was cancelled, or
        ///   ``ConveyorError/StreamFailureReason/lineTooLong(limit:)`` once the lines before
        ///   the too-long one have been returned.
        public mutating func next() async throws -> String? {
            while ready.isEmpty {
                if let error = pendingError {
                    pendingError = nil
                    throw error
                }
                if finished { return nil }
                if let chunk = try await chunks.next() {
                    let pushed = splitter.push(chunk)
                    ready = pushed.lines
                    if pushed.overflowed {
                        // Nobody reads past a line that cannot be held: stop the transfer now,
                        // and hand over the lines the chunk completed before that one.
                        finished = true
                        chunks.stopper?.stop()
                        pendingError = ConveyorError.streamFailed(reason: .lineTooLong(limit: splitter.maximumLength))
                    }
                } else {
                    finished = true
                    ready = splitter.finish()
                }
            }
            return ready.removeFirst()
        }
    }

    /// An iterator over the lines.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(chunks: stream.makeAsyncIterator(), splitter: LineSplitter(maximumLength: maximumLength))
    }
}

/// Splits bytes into lines at CRLF, LF or CR, across chunk boundaries; holds at most
/// `maximumLength` bytes of an unfinished line.
struct LineSplitter {
    /// The longest line, in bytes without its line end.
    let maximumLength: Int
    private var pending: [UInt8] = []
    /// The previous chunk ended with a CR: an LF starting the next one belongs to it.
    private var afterCR = false

    init(maximumLength: Int = HTTPStream.defaultMaximumLineLength) {
        self.maximumLength = max(1, maximumLength)
    }

    /// The lines completed by `chunk`, and whether a line then passed ``maximumLength`` (the
    /// rest of the chunk is not read: the lines returned are the ones before that line).
    mutating func push(_ chunk: Data) -> (lines: [String], overflowed: Bool) {
        var lines: [String] = []
        for byte in chunk {
            if afterCR {
                afterCR = false
                if byte == UInt8(ascii: "\n") { continue }
            }
            switch byte {
            case UInt8(ascii: "\r"):
                lines.append(String(decoding: pending, as: UTF8.self))
                pending.removeAll(keepingCapacity: true)
                afterCR = true
            case UInt8(ascii: "\n"):
                lines.append(String(decoding: pending, as: UTF8.self))
                pending.removeAll(keepingCapacity: true)
            default:
                guard pending.count < maximumLength else { return (lines, true) }
                pending.append(byte)
            }
        }
        return (lines, false)
    }

    /// The unterminated last line, if there is one.
    mutating func finish() -> [String] {
        defer { pending.removeAll() }
        return pending.isEmpty ? [] : [String(decoding: pending, as: UTF8.self)]
    }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response whose body is consumed while it arrives: an `AsyncSequence` of `Data` chunks.
///
/// Made by ``HTTPClient/stream(_:method:parameters:headers:requestSerializer:bufferLimit:)``,
/// which returns once the head has arrived and passed validation (a 404 throws there, with its
/// body). At most about ``bufferLimit`` bytes wait ahead of the consumer: a consumer that stops
/// pulling pauses the transfer (libcurl pauses it; URLSession suspends the task), so memory stays
/// bounded however fast the server sends. Breaking out of the loop, or cancelling the Task,
/// cancels the transfer. Later failures (a timeout, a dropped connection) are thrown by the
/// sequence as ``ConveyorError``.
///
/// ```swift
/// let stream = try await client.stream("logs/tail")
/// for try await line in stream.lines { print(line) }
/// ```
public final class HTTPStream: AsyncSequence, Sendable {
    /// A chunk of the body, as it arrived.
    public typealias Element = Data

    /// The default of ``bufferLimit``: 4 MB.
    public static let defaultBufferLimit = 4 * 1024 * 1024

    /// The validated response head.
    public let head: HTTPResponseHead
    /// Bytes held ahead of the consumer before the transfer pauses.
    public let bufferLimit: Int

    let operation: HTTPRequestOperation
    let channel: BodyChannel
    /// Whether an iterator was made: the body goes to one consumer.
    private let iterated = Lock(false)

    /// The validated response head as Foundation's type, built on first access.
    public var response: HTTPURLResponse { head.urlResponse }

    init(head: HTTPResponseHead, operation: HTTPRequestOperation, channel: BodyChannel) {
        self.head = head
        self.operation = operation
        self.channel = channel
        self.bufferLimit = channel.limit
    }

    /// Nobody can read the rest: stop the transfer.
    deinit { operation.cancel() }

    /// Stops the transfer; iteration then throws ``ConveyorError/cancelled(reason:)``.
    public func cancel() { operation.cancel() }

    /// Iterates the body's chunks.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let channel: BodyChannel
        /// Nil for a refused second iterator, which must not stop the first one's transfer.
        let stopper: Stopper?

        /// The next chunk; nil at the end of the body.
        /// - Throws: ``ConveyorError`` when the transfer failed or was cancelled, and
        ///   ``ConveyorError/StreamFailureReason/alreadyIterated`` from a second iterator.
        public mutating func next() async throws -> Data? {
            let channel = channel
            guard let stopper else { throw ConveyorError.streamFailed(reason: .alreadyIterated) }
            return try await withTaskCancellationHandler {
                try await channel.next()
            } onCancel: {
                stopper.stop()
            }
        }
    }

    /// Keeps the stream alive while it is iterated, and cancels the transfer when the iterator
    /// is dropped (a `break` out of the loop).
    final class Stopper: Sendable {
        let stream: HTTPStream
        init(_ stream: HTTPStream) { self.stream = stream }
        func stop() { stream.operation.cancel() }
        deinit { stream.operation.cancel() }
    }

    /// An iterator over the chunks. A stream has one consumer: every iterator after the first
    /// (another `for` loop, or ``lines`` after the chunks) throws
    /// ``ConveyorError/StreamFailureReason/alreadyIterated`` at its first `next()`, and leaves
    /// the first one's transfer alone.
    public func makeAsyncIterator() -> AsyncIterator {
        let first = iterated.withLock { iterated in
            defer { iterated = true }
            return !iterated
        }
        return AsyncIterator(channel: channel, stopper: first ? Stopper(self) : nil)
    }

    /// The default longest line of ``lines``: 1 MiB (1,048,576 bytes, without the line end).
    public static let defaultMaximumLineLength = 1024 * 1024

    /// The body as UTF-8 text lines, split at CRLF, LF or a lone CR (as Server-Sent Events
    /// accept); empty lines are kept, an unterminated last line is delivered at the end. A line
    /// longer than ``defaultMaximumLineLength`` ends the sequence with
    /// ``ConveyorError/StreamFailureReason/lineTooLong(limit:)``, thrown after the lines before
    /// it (those that arrived in the same chunk too), and stops the transfer.
    public var lines: HTTPStreamLines { HTTPStreamLines(stream: self, maximumLength: Self.defaultMaximumLineLength) }

    /// The body as text lines (see ``lines``) with another limit on a line's length.
    /// - Parameter maximumLength: The longest line accepted, in bytes without the line end
    ///   (at least 1); a longer one ends the sequence with
    ///   ``ConveyorError/StreamFailureReason/lineTooLong(limit:)``.
    /// - Returns: The lines.
    public func lines(maximumLength: Int) -> HTTPStreamLines {
        HTTPStreamLines(stream: self, maximumLength: Swift.max(1, maximumLength))
    }
}

extension HTTPClient {
    /// Sends a request and returns its response as a stream, once the head has arrived and
    /// passed validation.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - method: The method; default `GET`.
    ///   - parameters: Encoded by ``requestSerializer``; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - bufferLimit: Bytes held ahead of the consumer before the transfer pauses; default
    ///     ``HTTPStream/defaultBufferLimit``.
    /// - Returns: The stream.
    /// - Throws: ``ConveyorError``: an unacceptable status (with the body it came with), a
    ///   failure before the head, or cancellation.
    public func stream(
        _ path: String, method: HTTPMethod = .get, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil, bufferLimit: Int = HTTPStream.defaultBufferLimit
    ) async throws -> HTTPStream {
        let request = try request(
            method: method, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer)
        return try await stream(request, bufferLimit: bufferLimit)
    }

    /// Sends `request` and returns its response as a stream (see
    /// ``stream(_:method:parameters:headers:requestSerializer:bufferLimit:)``).
    /// - Parameters:
    ///   - request: The request.
    ///   - bufferLimit: Bytes held ahead of the consumer before the transfer pauses.
    /// - Returns: The stream.
    /// - Throws: ``ConveyorError``.
    public func stream(_ request: URLRequest, bufferLimit: Int = HTTPStream.defaultBufferLimit) async throws -> HTTPStream {
        let operation = self.operation(HTTPRequestOperation.self, with: request)
        let channel = BodyChannel(limit: bufferLimit)
        // The consumer's pull that caught up is an event of the transfer.
        channel.setOnResume { [weak operation] in
            guard let operation else { return }
            operation.onExecutor { operation.resumeReceiving() }
        }
        operation.mutableState.withLock { $0.bodyChannel = channel }
        // A stream has no end to wait for: only the idle timeout applies.
        operation.resourceTimeout = nil
        enqueueStream(operation)
        let head = try await withTaskCancellationHandler {
            try await channel.head()
        } onCancel: {
            operation.cancel()
        }
        return HTTPStream(head: head, operation: operation, channel: channel)
    }
}

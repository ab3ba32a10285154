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
        let stopper: Stopper

        /// The next chunk; nil at the end of the body.
        /// - Throws: ``ConveyorError`` when the transfer failed or was cancelled.
        public mutating func next() async throws -> Data? {
            let channel = channel
            let stopper = stopper
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

    /// An iterator over the chunks; the sequence is meant to be iterated once.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(channel: channel, stopper: Stopper(self))
    }

    /// The body as UTF-8 text lines, split at CRLF, LF or a lone CR (as Server-Sent Events
    /// accept); empty lines are kept, an unterminated last line is delivered at the end.
    public var lines: HTTPStreamLines { HTTPStreamLines(stream: self) }
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
        channel.setOnResume { [weak operation] in operation?.mutableState.withLock { $0.task }?.resumeReceiving() }
        operation.mutableState.withLock { $0.bodyChannel = channel }
        // A stream has no end to wait for: only the idle timeout applies.
        operation.resourceTimeout = nil
        enqueue(operation)
        let head = try await withTaskCancellationHandler {
            try await channel.head()
        } onCancel: {
            operation.cancel()
        }
        return HTTPStream(head: head, operation: operation, channel: channel)
    }
}

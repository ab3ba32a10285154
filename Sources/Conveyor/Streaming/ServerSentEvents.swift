import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Follows a Server-Sent Events endpoint: an `AsyncSequence` of ``ServerSentEvent``s that
/// reconnects when the connection ends or drops — after the server's `retry` (default 3 s),
/// backing off after connections that fail or deliver nothing (``Reconnection``), sending
/// `Last-Event-ID` — and stops on a 204, on an answer that is not a 2xx `text/event-stream`
/// (thrown), or when the consumer stops (breaking out of the loop or cancelling the Task closes
/// the connection and throws ``ConveyorError/cancelled(reason:)``). An event whose `data` is
/// larger than ``maximumEventSize``, or a line of the stream longer than ``maximumLineLength``,
/// ends the sequence with ``ConveyorError/StreamFailureReason/eventTooLarge(limit:)``.
///
/// ```swift
/// for try await event in client.serverSentEvents("notifications") {
///     print(event.type, event.data)
/// }
/// ```
public struct ServerSentEvents: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = ServerSentEvent

    /// The default of ``maximumEventSize``: 1 MiB.
    public static let defaultMaximumEventSize = 1024 * 1024

    let client: HTTPClient
    let makeRequest: @Sendable () throws -> URLRequest
    /// When to reconnect, and when to give up.
    public let reconnection: Reconnection
    /// The largest `data` of one event, in bytes: the values of its `data` fields and the line
    /// feeds between them, not the field names, the `: ` after them or the line ends.
    public let maximumEventSize: Int

    /// Bytes a line may have beyond ``maximumEventSize``: room for `data: ` before the largest
    /// value allowed (6 bytes) and a byte order mark at the start of a stream (3), rounded up.
    public static let lineAllowance = 16

    /// The longest line of the stream, in bytes without its line end: ``maximumEventSize`` plus
    /// ``lineAllowance`` (saturating). Every line is bounded — a `data` line, any other field, a
    /// comment — so a server cannot make the client hold a line that never ends: the sequence
    /// ends with ``ConveyorError/StreamFailureReason/eventTooLarge(limit:)`` as soon as a line
    /// passes it, without waiting for its line end.
    public var maximumLineLength: Int {
        let (sum, overflow) = maximumEventSize.addingReportingOverflow(Self.lineAllowance)
        return overflow ? Int.max : sum
    }
    let bufferLimit: Int

    /// Reads events, connecting and reconnecting as needed.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let events: ServerSentEvents
        var lines: HTTPStreamLines.AsyncIterator?
        var parser: ServerSentEventParser
        /// Connections in a row that failed or ended without an event.
        var failures = 0
        /// The current connection delivered an event.
        var delivered = false
        var connected = false
        var done = false

        /// The next event; nil once the server answered 204.
        /// - Throws: ``ConveyorError``: an answer that is not a 2xx `text/event-stream`, an event
        ///   too large, reconnection giving up, or cancellation (``ConveyorError/cancelled(reason:)``).
        public mutating func next() async throws -> ServerSentEvent? {
            do {
                return try await nextEvent()
            } catch is CancellationError {
                // Cancelled while waiting to reconnect: the same error as every other cancellation.
                done = true
                throw ConveyorError.cancelled(reason: .explicit)
            } catch {
                done = true
                lines = nil
                throw error
            }
        }

        private mutating func nextEvent() async throws -> ServerSentEvent? {
            while !done {
                if lines == nil {
                    // Reconnecting: wait first (not before the first connection).
                    if connected {
                        try await Seconds.sleep(events.reconnection.delay(serverRetry: parser.reconnectionTime, failures: failures))
                    }
                    connected = true
                    do {
                        guard let stream = try await connect() else {
                            done = true
                            return nil
                        }
                        lines = stream.lines(maximumLength: events.maximumLineLength).makeAsyncIterator()
                    } catch let error as ConveyorError where Self.isConnectionLoss(error) {
                        try noteFailure(error)
                        continue
                    }
                    parser.startStream()
                    delivered = false
                }
                do {
                    guard let line = try await lines!.next() else {
                        lines = nil  // the server ended the stream: reconnect
                        if !delivered { try noteFailure(nil) }
                        continue
                    }
                    if let event = try parser.feed(line) {
                        failures = 0
                        delivered = true
                        return event
                    }
                } catch let error as ConveyorError where Self.isConnectionLoss(error) {
                    lines = nil  // dropped: reconnect
                    if !delivered { try noteFailure(error) }
                } catch ConveyorError.streamFailed(reason: .lineTooLong) {
                    // A line longer than any event allows: one error for an event too large,
                    // whether its data or a single line of it passed the bound.
                    throw ConveyorError.streamFailed(reason: .eventTooLarge(limit: events.maximumEventSize))
                }
            }
            return nil
        }

        /// Counts a connection that failed or delivered nothing; throws when the policy gives up.
        private mutating func noteFailure(_ error: ConveyorError?) throws {
            failures += 1
            if events.reconnection.givesUp(after: failures) {
                throw ConveyorError.streamFailed(reason: .reconnectionGaveUp(attempts: failures, lastError: error))
            }
        }

        /// One connection: nil when the server said 204 (no more events).
        private mutating func connect() async throws -> HTTPStream? {
            var request = try events.makeRequest()
            request.setHeader("text/event-stream", for: "Accept")
            request.setHeader("no-cache", for: "Cache-Control")
            if let id = parser.lastEventID { request.setHeader(id, for: "Last-Event-ID") }
            let stream = try await events.client.stream(request, bufferLimit: events.bufferLimit)
            if stream.head.statusCode == 204 {
                stream.cancel()
                return nil
            }
            guard stream.head.mimeType == "text/event-stream" else {
                stream.cancel()
                throw ConveyorError.unacceptableContentType(
                    stream.head.mimeType, acceptable: ["text/event-stream"], response: stream.response, data: nil)
            }
            return stream
        }

        /// Failures after which a reconnection may succeed: the network, or an idle timeout.
        static func isConnectionLoss(_ error: ConveyorError) -> Bool {
            switch error {
            case .network, .timedOut: return true
            default: return false
            }
        }
    }

    /// An iterator that connects on its first `next()`.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(events: self, parser: ServerSentEventParser(maximumEventSize: maximumEventSize))
    }
}

extension HTTPClient {
    /// Follows a Server-Sent Events endpoint (see ``ServerSentEvents``).
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for these requests alone; default none.
    ///   - reconnection: When to reconnect and when to give up; default ``ServerSentEvents/Reconnection/default``.
    ///   - maximumEventSize: The largest `data` of one event, in bytes (field names and line
    ///     ends not counted); default ``ServerSentEvents/defaultMaximumEventSize`` (1 MiB). A line
    ///     of the stream may have up to ``ServerSentEvents/lineAllowance`` bytes more.
    ///   - bufferLimit: Bytes held ahead of the consumer before the transfer pauses; default
    ///     ``HTTPStream/defaultBufferLimit``.
    /// - Returns: The events.
    public func serverSentEvents(
        _ path: String, parameters: SendableParameters? = nil, headers: HTTPHeaders = [:],
        reconnection: ServerSentEvents.Reconnection = .default, maximumEventSize: Int = ServerSentEvents.defaultMaximumEventSize,
        bufferLimit: Int = HTTPStream.defaultBufferLimit
    ) -> ServerSentEvents {
        ServerSentEvents(
            client: self,
            makeRequest: { [self] in try request(method: .get, path: path, parameters: parameters, headers: headers) },
            reconnection: reconnection, maximumEventSize: max(1, maximumEventSize), bufferLimit: bufferLimit)
    }

    /// Follows a Server-Sent Events endpoint, waiting `reconnectionDelay` seconds before
    /// reconnecting until the server sends `retry`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for these requests alone; default none.
    ///   - reconnectionDelay: The ``ServerSentEvents/Reconnection/initialDelay``.
    ///   - bufferLimit: Bytes held ahead of the consumer before the transfer pauses.
    /// - Returns: The events.
    @available(*, deprecated, message: "use serverSentEvents(_:parameters:headers:reconnection:) with Reconnection(initialDelay:)")
    public func serverSentEvents(
        _ path: String, parameters: SendableParameters? = nil, headers: HTTPHeaders = [:], reconnectionDelay: TimeInterval,
        bufferLimit: Int = HTTPStream.defaultBufferLimit
    ) -> ServerSentEvents {
        serverSentEvents(
            path, parameters: parameters, headers: headers, reconnection: .init(initialDelay: reconnectionDelay), bufferLimit: bufferLimit)
    }
}

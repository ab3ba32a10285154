import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One event of a Server-Sent Events stream (the WHATWG `EventSource` format).
public struct ServerSentEvent: Sendable, Equatable {
    /// The `event` field; `"message"` when the event named none.
    public var type: String
    /// The `data` lines, joined with `"\n"`.
    public var data: String
    /// The last `id` seen so far in the stream (the one sent as `Last-Event-ID` on reconnection); nil before any.
    public var id: String?
    /// The `retry` field of this event, in seconds; nil when it had none.
    public var retry: TimeInterval?

    /// Creates an event.
    /// - Parameters:
    ///   - type: The event type; default `"message"`.
    ///   - data: The data.
    ///   - id: The last event id; default nil.
    ///   - retry: The reconnection time it set, in seconds; default nil.
    public init(type: String = "message", data: String, id: String? = nil, retry: TimeInterval? = nil) {
        self.type = type
        self.data = data
        self.id = id
        self.retry = retry
    }
}

/// Follows a Server-Sent Events endpoint: an `AsyncSequence` of ``ServerSentEvent``s that
/// reconnects when the connection ends or drops — after the server's `retry` (default 3 s),
/// sending `Last-Event-ID` — and stops on a 204, on an answer that is not a 2xx
/// `text/event-stream` (thrown), or when the consumer stops (breaking out of the loop or
/// cancelling the Task closes the connection).
///
/// ```swift
/// for try await event in client.serverSentEvents("notifications") {
///     print(event.type, event.data)
/// }
/// ```
public struct ServerSentEvents: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = ServerSentEvent

    let client: HTTPClient
    let makeRequest: @Sendable () throws -> URLRequest
    let reconnectionDelay: TimeInterval
    let bufferLimit: Int

    /// Reads events, connecting and reconnecting as needed.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let events: ServerSentEvents
        var lines: HTTPStreamLines.AsyncIterator?
        var parser = ServerSentEventParser()
        var delay: TimeInterval
        var connected = false
        var done = false

        /// The next event; nil once the server answered 204.
        /// - Throws: ``ConveyorError`` for an answer that is not a 2xx `text/event-stream`, or
        ///   cancellation.
        public mutating func next() async throws -> ServerSentEvent? {
            while !done {
                if lines == nil {
                    // Reconnecting: wait the server's retry time first (not before the first connection).
                    if connected { try await Task.sleep(nanoseconds: UInt64(Swift.max(0, delay) * 1e9)) }
                    connected = true
                    guard let stream = try await connect() else {
                        done = true
                        return nil
                    }
                    lines = stream.lines.makeAsyncIterator()
                    parser.resetEvent()
                }
                do {
                    guard let line = try await lines!.next() else {
                        lines = nil  // the server ended the stream: reconnect
                        continue
                    }
                    let event = parser.feed(line)
                    // `retry` counts from the moment it is read, event or not.
                    if let time = parser.reconnectionTime { delay = time }
                    if let event { return event }
                } catch let error as ConveyorError where Self.isConnectionLoss(error) {
                    lines = nil  // dropped: reconnect
                }
            }
            return nil
        }

        /// One connection: nil when the server said 204 (no more events).
        private mutating func connect() async throws -> HTTPStream? {
            var request = try events.makeRequest()
            request.setHeader("text/event-stream", for: "Accept")
            request.setHeader("no-cache", for: "Cache-Control")
            if let id = parser.lastEventID { request.setHeader(id, for: "Last-Event-ID") }
            while true {
                do {
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
                } catch let error as ConveyorError where Self.isConnectionLoss(error) {
                    try await Task.sleep(nanoseconds: UInt64(Swift.max(0, delay) * 1e9))
                }
            }
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
        AsyncIterator(events: self, delay: reconnectionDelay)
    }
}

extension HTTPClient {
    /// Follows a Server-Sent Events endpoint (see ``ServerSentEvents``).
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for these requests alone; default none.
    ///   - reconnectionDelay: Seconds before reconnecting until the server sends `retry`; default 3.
    ///   - bufferLimit: Bytes held ahead of the consumer before the transfer pauses; default
    ///     ``HTTPStream/defaultBufferLimit``.
    /// - Returns: The events.
    public func serverSentEvents(
        _ path: String, parameters: SendableParameters? = nil, headers: HTTPHeaders = [:], reconnectionDelay: TimeInterval = 3,
        bufferLimit: Int = HTTPStream.defaultBufferLimit
    ) -> ServerSentEvents {
        ServerSentEvents(
            client: self,
            makeRequest: { [self] in try request(method: .get, path: path, parameters: parameters, headers: headers) },
            reconnectionDelay: reconnectionDelay, bufferLimit: bufferLimit)
    }
}

/// The WHATWG event-stream parser: lines in, events out.
struct ServerSentEventParser {
    private var type = ""
    private var data: [String] = []
    private var retry: TimeInterval?
    /// The id of the last event dispatched (sent as `Last-Event-ID` on reconnection): an `id`
    /// field counts once its event is complete, so an event cut off by a dropped connection
    /// does not.
    private(set) var lastEventID: String?
    /// The `id` fields read so far (the WHATWG "last event ID buffer").
    private var idBuffer: String?
    /// The last `retry` field seen, in seconds: how long to wait before reconnecting.
    private(set) var reconnectionTime: TimeInterval?

    /// Forgets a half-received event (a connection dropped in the middle of one).
    mutating func resetEvent() {
        type = ""
        data = []
        retry = nil
        idBuffer = lastEventID
    }

    /// Takes one line; returns the event an empty line completes.
    mutating func feed(_ line: String) -> ServerSentEvent? {
        if line.isEmpty {
            lastEventID = idBuffer
            defer { resetEvent() }
            guard !data.isEmpty else { return nil }
            return ServerSentEvent(type: type.isEmpty ? "message" : type, data: data.joined(separator: "\n"), id: lastEventID, retry: retry)
        }
        if line.hasPrefix(":") { return nil }  // a comment
        let field: Substring
        var value: Substring
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            field = Substring(line)
            value = ""
        }
        switch field {
        case "event": type = String(value)
        case "data": data.append(String(value))
        case "id" where !value.contains("\u{0}"): idBuffer = String(value)
        case "retry":
            if !value.isEmpty, value.allSatisfy(\.isASCII), value.allSatisfy(\.isNumber), let milliseconds = Double(value) {
                retry = milliseconds / 1000
                reconnectionTime = milliseconds / 1000
            }
        default: break
        }
        return nil
    }
}

import Foundation

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

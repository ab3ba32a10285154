import Foundation

/// The WHATWG event-stream parser: lines in, events out. Holds at most `maximumEventSize`
/// bytes of an event's `data`.
struct ServerSentEventParser {
    /// The largest `data` of one event, in bytes (its lines and the line feeds between them).
    let maximumEventSize: Int
    private var type = ""
    private var data: [String] = []
    private var dataSize = 0
    private var retry: TimeInterval?
    /// The id of the last event dispatched (sent as `Last-Event-ID` on reconnection): an `id`
    /// field counts once its event is complete, so an event cut off by a dropped connection
    /// does not. Nil before any, and after an empty `id` field (which resets it).
    private(set) var lastEventID: String?
    /// The `id` fields read so far (the WHATWG "last event ID buffer").
    private var idBuffer: String?
    /// The last `retry` field seen, in seconds, as the server sent it (unclamped): how long to
    /// wait before reconnecting.
    private(set) var reconnectionTime: TimeInterval?
    /// The next line is the first of a connection's stream, where a UTF-8 BOM is skipped.
    private var atStreamStart = true

    init(maximumEventSize: Int = ServerSentEvents.defaultMaximumEventSize) {
        self.maximumEventSize = max(1, maximumEventSize)
    }

    /// A new connection's stream starts: forgets a half-received event (a connection dropped in
    /// the middle of one) and expects a BOM again.
    mutating func startStream() {
        resetEvent()
        atStreamStart = true
    }

    /// Forgets a half-received event.
    mutating func resetEvent() {
        type = ""
        data = []
        dataSize = 0
        retry = nil
        idBuffer = lastEventID
    }

    /// Takes one line; returns the event an empty line completes.
    /// - Throws: ``ConveyorError/StreamFailureReason/eventTooLarge(limit:)`` when the event's
    ///   data passes ``maximumEventSize``.
    mutating func feed(_ line: String) throws -> ServerSentEvent? {
        var line = Substring(line)
        if atStreamStart {
            atStreamStart = false
            // WHATWG: one leading U+FEFF is not part of the stream.
            if line.first == "\u{FEFF}" { line = line.dropFirst() }
        }
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
            field = line
            value = ""
        }
        switch field {
        case "event": type = String(value)
        case "data":
            dataSize += value.utf8.count + (data.isEmpty ? 0 : 1)
            guard dataSize <= maximumEventSize else { throw ConveyorError.streamFailed(reason: .eventTooLarge(limit: maximumEventSize)) }
            data.append(String(value))
        case "id" where !value.contains("\u{0}"):
            // An empty id resets the last event id: no `Last-Event-ID` is sent after it.
            idBuffer = value.isEmpty ? nil : String(value)
        case "retry":
            // Digits only; the value is clamped where it is used (ServerSentEvents.Reconnection).
            if HTTPGrammar.isDigits(value), let milliseconds = Double(value) {
                retry = milliseconds / 1000
                reconnectionTime = milliseconds / 1000
            }
        default: break
        }
        return nil
    }
}

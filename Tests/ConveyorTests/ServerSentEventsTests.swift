import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// Server-Sent Events over real sockets: parsing, reconnection with `Last-Event-ID` and `retry`,
/// and the answers that stop a stream, on both transports.
@Suite("Server-Sent Events")
struct ServerSentEventsTests {
    /// Serves `/events`: a connection dropped mid-event, a reconnection that checks
    /// `Last-Event-ID`, then 204. Records each connection's arrival and `Last-Event-ID`.
    static func eventRoute(_ server: LocalHTTPServer) -> ConnectionLog {
        struct Dropped: Error {}
        let log = ConnectionLog()
        server.route("/events") { request in
            let number = log.append((.now, request.headers["Last-Event-ID"]))
            let stream = ["Content-Type": "text/event-stream"] as HTTPHeaders
            switch number {
            case 1:
                return .init(
                    headers: stream,
                    body: .stream(chunked: true) { writer in
                        try writer.write(Data("retry: 200\n\n: a comment\nid: 1\ndata: first\n\n".utf8))
                        try writer.write(Data("event: custom\nid: 2\ndata: line one\ndata:line two\n\n".utf8))
                        try writer.write(Data("id: 9\ndata: never dispatched".utf8))
                        throw Dropped()  // the connection drops in the middle of an event
                    })
            case 2:
                return .init(
                    headers: stream, body: .stream(chunked: true) { writer in try writer.write(Data("id: 3\r\ndata: third\r\n\r\n".utf8)) })
            default:
                return .init(status: 204)
            }
        }
        return log
    }

    @Test(
        "Events parse; a dropped connection reconnects after retry with Last-Event-ID; 204 ends the stream",
        arguments: HTTPClient.TransportKind.testedKinds)
    func reconnects(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let connections = Self.eventRoute(server)
        var events: [ServerSentEvent] = []
        for try await event in testClient(server, transport).serverSentEvents("events", reconnection: .init(initialDelay: 30)) {
            events.append(event)
        }
        #expect(
            events == [
                ServerSentEvent(data: "first", id: "1"),
                ServerSentEvent(type: "custom", data: "line one\nline two", id: "2"),
                ServerSentEvent(data: "third", id: "3"),
            ])
        let seen = connections.entries
        #expect(seen.map(\.lastEventID) == [nil, "2", "3"])
        // The server's retry (0.2 s), not the 30 s default; the upper bound leaves room for a
        // loaded machine (the whole suite runs in parallel on two cores; a fresh clone's run once
        // delayed the reconnection by 10.8 s).
        if seen.count == 3 {
            let gap = seen[1].at - seen[0].at
            #expect(gap >= .milliseconds(150) && gap < .seconds(25), "\(gap)")
        }
    }

    @Test(
        "An answer that is not a 2xx text/event-stream is thrown, and nothing reconnects", arguments: HTTPClient.TransportKind.testedKinds)
    func refusedAnswers(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/not-events") { _ in .text("plain") }
        server.route("/gone") { _ in .text("gone", status: 404) }
        let client = testClient(server, transport)
        await #expect {
            for try await _ in client.serverSentEvents("not-events") {}
        } throws: { error in
            guard case .unacceptableContentType(let type, _, _, _)? = error as? ConveyorError else { return false }
            return type == "text/plain"
        }
        await #expect {
            for try await _ in client.serverSentEvents("gone") {}
        } throws: { ($0 as? ConveyorError)?.statusCode == 404 }
        #expect(server.requestCount(path: "/not-events") == 1 && server.requestCount(path: "/gone") == 1)
    }
}

/// The connections a route saw: when each arrived and the `Last-Event-ID` it sent.
final class ConnectionLog: Sendable {
    private let storage = Lock<[(at: ContinuousClock.Instant, lastEventID: String?)]>([])

    /// Records a connection. - Returns: Its number, from 1.
    func append(_ entry: (at: ContinuousClock.Instant, lastEventID: String?)) -> Int {
        storage.withLock {
            $0.append(entry)
            return $0.count
        }
    }

    var entries: [(at: ContinuousClock.Instant, lastEventID: String?)] { storage.withLock { $0 } }
}

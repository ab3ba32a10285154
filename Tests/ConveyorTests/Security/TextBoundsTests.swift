import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// The bounds of the text layers over a body, held to what their docs promise (issue 37, items
/// 23 and 24): `lines(maximumLength:)` hands over what came before a line too long, and
/// `maximumEventSize` counts an event's data, not the `data: ` around it. Real sockets, both
/// transports.
@Suite("Text bounds: lines before a too-long line, an event's data as documented")
struct TextBoundsTests {
    /// A route answering `body` in one write of one chunk, so the client reads it as one chunk.
    static func oneWrite(_ server: LocalHTTPServer, path: String, contentType: String = "text/plain", _ body: String) {
        server.route(path) { _ in
            .init(headers: ["Content-Type": contentType], body: .stream(chunked: true) { writer in try writer.write(Data(body.utf8)) })
        }
    }

    @Test(
        "lines(maximumLength:) delivers the lines before a too-long one in the same chunk, then lineTooLong",
        arguments: HTTPClient.TransportKind.testedKinds)
    func linesBeforeTooLong(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        Self.oneWrite(server, path: "/lines", "short1\nshort2\n" + String(repeating: "x", count: 1001) + "\nafter\n")
        let stream = try await testClient(server, transport).stream("lines")
        var received: [String] = []
        await #expect {
            for try await line in stream.lines(maximumLength: 1000) { received.append(line) }
        } throws: { error in
            guard case .streamFailed(.lineTooLong(let limit))? = error as? ConveyorError else { return false }
            return limit == 1000
        }
        #expect(received == ["short1", "short2"])
    }

    @Test("A line of exactly maximumLength passes; the sequence ends after the error", arguments: HTTPClient.TransportKind.testedKinds)
    func linesAtTheLimit(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let exact = String(repeating: "y", count: 1000)
        Self.oneWrite(server, path: "/lines", "a\n" + exact + "\r\n" + String(repeating: "z", count: 1001))
        let stream = try await testClient(server, transport).stream("lines")
        var iterator = stream.lines(maximumLength: 1000).makeAsyncIterator()
        #expect(try await iterator.next() == "a")
        #expect(try await iterator.next() == exact)
        await #expect(throws: ConveyorError.self) { _ = try await iterator.next() }
        #expect(try await iterator.next() == nil)
    }

    @Test(
        "maximumEventSize bounds an event's data: 999 and 1000 bytes pass, 1001 fails with eventTooLarge",
        arguments: HTTPClient.TransportKind.testedKinds)
    func eventDataAtTheLimit(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let events = [999, 1000, 1001].map { "data: " + String(repeating: "d", count: $0) + "\n\n" }
        // Two data lines making 1000 bytes with the line feed between them pass too.
        let split = "data:" + String(repeating: "s", count: 500) + "\r\ndata: " + String(repeating: "t", count: 499) + "\n\n"
        Self.oneWrite(server, path: "/events", contentType: "text/event-stream", events[0] + events[1] + split + events[2])
        var sizes: [Int] = []
        await #expect {
            for try await event in testClient(server, transport).serverSentEvents("events", maximumEventSize: 1000) {
                sizes.append(event.data.utf8.count)
            }
        } throws: { error in
            guard case .streamFailed(.eventTooLarge(let limit))? = error as? ConveyorError else { return false }
            return limit == 1000
        }
        #expect(sizes == [999, 1000, 1000])
    }

    @Test(
        "A line of a Server-Sent Events stream is bounded at maximumEventSize + lineAllowance, ended or not",
        arguments: HTTPClient.TransportKind.testedKinds)
    func eventLineBound(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let allowed = ServerSentEvents.lineAllowance + 1000
        // A comment of exactly the longest line is read (and ignored); one byte more, with no
        // line end ever sent, ends the sequence at once.
        let comment = ":" + String(repeating: "c", count: allowed - 1) + "\n"
        Self.oneWrite(
            server, path: "/events", contentType: "text/event-stream",
            comment + "data: ok\n\n" + ":" + String(repeating: "e", count: allowed))
        let events = testClient(server, transport).serverSentEvents("events", maximumEventSize: 1000)
        #expect(events.maximumLineLength == allowed)
        var received: [String] = []
        await #expect {
            for try await event in events { received.append(event.data) }
        } throws: { error in
            guard case .streamFailed(.eventTooLarge(1000))? = error as? ConveyorError else { return false }
            return true
        }
        #expect(received == ["ok"])
        // The bound saturates instead of trapping.
        #expect(testClient(server, transport).serverSentEvents("events", maximumEventSize: .max).maximumLineLength == .max)
    }
}

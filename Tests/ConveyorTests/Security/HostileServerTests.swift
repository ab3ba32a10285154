import Conveyor
import ConveyorLocking
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

/// Streams, Server-Sent Events and the event-stream parser under a hostile server and a careless
/// caller (issue 27): numbers that used to trap, reconnection storms, unbounded lines and events,
/// a second consumer, and the WHATWG details. Real sockets, both transports.
@Suite("Hostile streams: clamped numbers, bounded reconnection, bounded text, one consumer")
struct HostileStreamTests {
    /// An event-stream route: each connection gets `body(number)` and is closed; nil answers 204.
    static func events(_ server: LocalHTTPServer, path: String = "/events", _ body: @escaping @Sendable (Int) -> String?) -> ConnectionLog {
        let log = ConnectionLog()
        server.route(path) { request in
            let number = log.append((.now, request.headers["Last-Event-ID"]))
            guard let text = body(number) else { return .init(status: 204) }
            return .init(headers: ["Content-Type": "text/event-stream"], body: .data(Data(text.utf8)))
        }
        return log
    }

    @Test(
        "A server's retry of 10^20 ms and a caller's .infinity are clamped, never a trap",
        arguments: HTTPClient.TransportKind.testedKinds)
    func absurdRetry(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let log = Self.events(server) { number in
            switch number {
            case 1: return "retry: 99999999999999999999\ndata: one\n\n"
            case 2: return "retry: 100000000000000\ndata: two\n\n"
            default: return nil
            }
        }
        let reconnection = ServerSentEvents.Reconnection(initialDelay: .infinity, minimumDelay: -.infinity, maximumDelay: 0.2)
        var received: [String] = []
        for try await event in testClient(server, transport).serverSentEvents("events", reconnection: reconnection) {
            received.append(event.data)
        }
        #expect(received == ["one", "two"])
        #expect(log.entries.count == 3)
        // A caller's absurd refresh timeout is clamped too.
        let authenticator = BearerTokenAuthenticator(credential: nil, refreshTimeout: .infinity) { _ in .init(accessToken: "x") }
        #expect(authenticator.refreshTimeout == BearerTokenAuthenticator.maximumRefreshTimeout)
        #expect(BearerTokenAuthenticator(credential: nil, refreshTimeout: .nan) { _ in .init(accessToken: "x") }.refreshTimeout == 0)
    }

    @Test(
        "retry: 0 from a server that answers and closes backs off, and the policy gives up with a typed error",
        arguments: HTTPClient.TransportKind.testedKinds)
    func noStorm(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let log = Self.events(server) { _ in "retry: 0\n\n" }
        let started = ContinuousClock.now
        let events = testClient(server, transport).serverSentEvents(
            "events", reconnection: .init(minimumDelay: 0.1, maximumDelay: 0.4, maximumFailedAttempts: 4))
        await #expect {
            for try await _ in events {}
        } throws: { error in
            guard case .streamFailed(.reconnectionGaveUp(let attempts, _))? = error as? ConveyorError else { return false }
            return attempts == 4
        }
        // Four connections, not thousands: the waits between them were at least 0.1 s each.
        #expect(log.entries.count == 4)
        #expect(ContinuousClock.now - started >= .milliseconds(300))
    }

    @Test("A refused port: the reconnection delay floor holds and the policy gives up", arguments: HTTPClient.TransportKind.testedKinds)
    func refusedPort(transport: HTTPClient.TransportKind) async throws {
        let refused = try RefusedPort()
        let client = testClient(baseURL: refused.baseURL, transport)
        let started = ContinuousClock.now
        await #expect {
            for try await _ in client.serverSentEvents(
                "events", reconnection: .init(initialDelay: 0, minimumDelay: 0.05, maximumDelay: 0.2, maximumFailedAttempts: 3))
            {}
        } throws: { error in
            guard case .streamFailed(.reconnectionGaveUp(3, let last?))? = error as? ConveyorError else { return false }
            return (last as? ConveyorError).map { if case .network = $0 { true } else { false } } ?? false
        }
        #expect(ContinuousClock.now - started >= .milliseconds(100))
    }

    @Test("An empty id resets Last-Event-ID; a leading BOM is skipped", arguments: HTTPClient.TransportKind.testedKinds)
    func whatwgDetails(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let log = Self.events(server) { number in
            switch number {
            case 1: return "\u{FEFF}retry: 50\nid: 7\ndata: first\n\nid\ndata: second\n\n"
            case 2: return "id: 8\ndata: third\n\n"
            default: return nil
            }
        }
        var received: [ServerSentEvent] = []
        for try await event in testClient(server, transport).serverSentEvents("events", reconnection: .init(minimumDelay: 0.05)) {
            received.append(event)
        }
        #expect(received.map(\.data) == ["first", "second", "third"])
        #expect(received.map(\.id) == ["7", nil, "8"])
        #expect(log.entries.map(\.lastEventID) == [nil, nil, "8"])
    }

    @Test("Cancelling during the reconnection delay throws ConveyorError.cancelled", arguments: HTTPClient.TransportKind.testedKinds)
    func cancelDuringDelay(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let log = Self.events(server) { _ in "retry: 60000\ndata: only\n\n" }
        let events = testClient(server, transport).serverSentEvents("events")
        let (started, signal) = AsyncStream.makeStream(of: Void.self)
        let task = Task {
            for try await _ in events { signal.yield() }
        }
        for await _ in started { break }  // the first event arrived: the next wait is 60 s
        task.cancel()
        await #expect {
            try await task.value
        } throws: { ($0 as? ConveyorError)?.isCancelled == true }
        #expect(log.entries.count == 1)
    }

    @Test("A quoted comma or slash in Content-Type does not change the media type", arguments: HTTPClient.TransportKind.testedKinds)
    func quotedParameters(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let served = Lock(0)
        server.route("/events") { _ in
            guard
                served.withLock({
                    $0 += 1
                    return $0
                }) == 1
            else { return .init(status: 204) }
            return .init(
                headers: ["Content-Type": #"text/event-stream; note="a,b/c"; charset=utf-8"#], body: .data(Data("data: ok\n\n".utf8)))
        }
        server.route("/text") { _ in
            .init(
                headers: ["Content-Type": #"text/plain; x="q\"uoted;,"; charset="iso-8859-1""#],
                body: .data(Data([0x63, 0x61, 0x66, 0xE9])))
        }
        let client = testClient(server, transport)
        var received: [String] = []
        for try await event in client.serverSentEvents("events") { received.append(event.data) }
        #expect(received == ["ok"])
        let result = try await client.response(for: try client.request(method: .get, path: "text"), responseSerializer: .string)
        #expect(result.value == "café")
        #expect(result.head.mimeType == "text/plain" && result.head.textEncodingName == "iso-8859-1")
    }

    @Test("A line without an end passes the limit: lineTooLong, and the transfer stops", arguments: HTTPClient.TransportKind.testedKinds)
    func lineLimit(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        // The server writes 1 MiB without a newline (ten times the limit), then waits, writing
        // nothing, for the client to close the connection: the line never ends, so only a
        // transfer stopped by lineTooLong closes it (the idle timeout is 60 s, past the wait).
        // A write that fails is the same event, seen earlier. Bounded: a client that reads
        // ahead without stopping (URLSession on Linux has no backpressure) gets 1 MiB, not a
        // flood that would hold both cores of a full run for the whole wait.
        let connectionClosed = DispatchSemaphore(value: 0)
        server.route("/endless") { _ in
            .init(
                body: .stream(chunked: true) { writer in
                    let chunk = Data(repeating: UInt8(ascii: "a"), count: 64 * 1024)
                    do {
                        for _ in 0..<16 { try writer.write(chunk) }
                    } catch {
                        connectionClosed.signal()
                        throw error
                    }
                    if writer.waitForClientToClose(timeout: 60) { connectionClosed.signal() }
                })
        }
        let stream = try await testClient(server, transport).stream("endless")
        await #expect {
            for try await _ in stream.lines(maximumLength: 100_000) {}
        } throws: { error in
            guard case .streamFailed(.lineTooLong(let limit))? = error as? ConveyorError else { return false }
            return limit == 100_000
        }
        // The event, not a time: 60 s only ends the wait when the client never closes (not a hang). Checked on
        // both transports. (With a 1 GiB body, URLSession on Linux — no backpressure — sometimes
        // read the whole body before the consumer reached the limit: the transfer had ended
        // before the cancel, and its connection stayed open for reuse. That was the earlier
        // "known issue"; this body never ends, so only the cancel can close the connection.)
        let closed = try await offPool { connectionClosed.wait(timeout: .now() + 60) == .success }
        #expect(closed, "the connection was still open 60 s after lineTooLong: the transfer did not stop")
        #expect(stream.bufferLimit == HTTPStream.defaultBufferLimit && HTTPStream.defaultMaximumLineLength == 1_048_576)
    }

    @Test("An event larger than maximumEventSize ends the sequence with eventTooLarge", arguments: HTTPClient.TransportKind.testedKinds)
    func eventLimit(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let line = "data: " + String(repeating: "x", count: 1000) + "\n"
        _ = Self.events(server) { _ in String(repeating: line, count: 200) + "\n" }  // 200 kB of data in one event
        await #expect {
            for try await _ in testClient(server, transport).serverSentEvents("events", maximumEventSize: 50_000) {}
        } throws: { error in
            guard case .streamFailed(.eventTooLarge(50_000))? = error as? ConveyorError else { return false }
            return true
        }
    }

    @Test("A second iterator of one stream fails at once and leaves the first one whole", arguments: HTTPClient.TransportKind.testedKinds)
    func secondConsumer(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let stream = try await testClient(server, transport).stream("bytes/200000")
        var first = stream.makeAsyncIterator()
        var second = stream.makeAsyncIterator()
        await #expect {
            _ = try await second.next()
        } throws: { error in
            guard case .streamFailed(.alreadyIterated)? = error as? ConveyorError else { return false }
            return true
        }
        await #expect(throws: ConveyorError.self) {
            for try await _ in stream.lines {}
        }
        var total = 0
        while let chunk = try await first.next() { total += chunk.count }
        #expect(total == 200_000)
    }
}

/// Authenticators, credentials and origins under a careless caller and a hostile server.
@Suite("Hostile credentials: refresh deadlines, no refresh loops, credentials stay with their origin")
struct HostileCredentialTests {
    private static func client(
        _ server: LocalHTTPServer, _ transport: HTTPClient.TransportKind, authenticator: (any Authenticator)? = nil,
        origins: [URL] = []
    ) -> HTTPClient {
        testClient(server, transport) { configuration in
            configuration.authenticator = authenticator
            configuration.credentialOrigins = origins
        }
    }

    /// Holds a continuation until released: a refresh closure that ignores cancellation.
    final class Gate: Sendable {
        private let waiter = Lock<CheckedContinuation<Void, Never>?>(nil)
        private let released = Lock(false)
        func wait() async {
            await withCheckedContinuation { continuation in
                let resumeNow = released.withLock { $0 }
                if resumeNow { continuation.resume() } else { waiter.withLock { $0 = continuation } }
            }
        }
        func release() {
            released.withLock { $0 = true }
            waiter.withLock { continuation in
                continuation?.resume()
                continuation = nil
            }
        }
    }

    @Test(
        "A refresh that ignores cancellation is cut off at its timeout; its late result is discarded",
        arguments: HTTPClient.TransportKind.testedKinds)
    func refreshDeadline(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let gate = Gate()
        let calls = Lock(0)
        let lateReturned = DispatchSemaphore(value: 0)
        // 10 s, not less: the second refresh below returns at once, yet on a loaded machine a
        // 0.3 s deadline passed before its task ran (seen in a full parallel run), and so did a
        // 2 s one beside four CPU-bound processes (scripts/test-under-load 4, both transports).
        let authenticator = BearerTokenAuthenticator(credential: nil, refreshTimeout: 10) { _ in
            let call = calls.withLock { count in
                count += 1
                return count
            }
            guard call == 1 else { return .init(accessToken: "fresh-token") }
            await gate.wait()  // never looks at cancellation
            defer { lateReturned.signal() }
            return .init(accessToken: "late-token")
        }
        let client = Self.client(server, transport, authenticator: authenticator)
        let started = ContinuousClock.now
        await #expect {
            _ = try await client.get("get")
        } throws: { error in
            guard case .credentialRefreshFailed(.timedOut(10))? = error as? ConveyorError else { return false }
            return true
        }
        // The closure is still waiting (it returns only once released below): the deadline ended
        // the wait, not the closure. The bound only catches a hang on a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(60))
        gate.release()
        // Wait for the late result to arrive: the closure has returned it to the authenticator.
        #expect(try await offPool { lateReturned.wait(timeout: .now() + 30) == .success })
        #expect(server.requestCount(path: "/get") == 0)
        // The next request shows on the wire whether the late token was kept. Discarded, the
        // credential is still missing, so it refreshes again (call 2) and sends the fresh token;
        // kept, it would send the late one. The authenticator settles the late result right after
        // the closure returns, in the same task, long before this request's round trip ends.
        _ = try await client.get("get")
        #expect(server.receivedRequests.last?.headers["Authorization"] == "Bearer fresh-token")
        #expect(authenticator.refreshCount == 2 && authenticator.credential?.accessToken == "fresh-token")
    }

    @Test(
        "A credential inside the refresh window is used as it is; one expired on arrival fails once",
        arguments: HTTPClient.TransportKind.testedKinds)
    func noRefreshLoop(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let soon = BearerTokenAuthenticator(credential: nil) { _ in
            .init(accessToken: "short-lived", expiresAt: Date(timeIntervalSinceNow: 30))
        }
        _ = try await Self.client(server, transport, authenticator: soon).get("get")
        #expect(soon.refreshCount == 1)
        #expect(server.receivedRequests.last?.headers["Authorization"] == "Bearer short-lived")
        // A second request reuses it: no refresh while it is fresh from the last one.
        _ = try await Self.client(server, transport, authenticator: soon).get("get")
        #expect(soon.refreshCount == 1)

        let expired = BearerTokenAuthenticator(credential: nil) { _ in
            .init(accessToken: "stale", expiresAt: Date(timeIntervalSinceNow: -5))
        }
        await #expect {
            _ = try await Self.client(server, transport, authenticator: expired).get("get")
        } throws: { error in
            guard case .credentialRefreshFailed(.expiredOnArrival)? = error as? ConveyorError else { return false }
            return true
        }
        #expect(expired.refreshCount == 1 && server.requestCount(path: "/get") == 2)
    }

    @Test(
        "Tokens and default Authorization stay with the base URL's origin unless another is named",
        arguments: HTTPClient.TransportKind.testedKinds)
    func credentialsStayHome(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let other = try LocalHTTPServer.started()  // another port: another origin
        defer { other.stop() }
        let authenticator = BearerTokenAuthenticator(credential: .init(accessToken: "home-token")) { _ in .init(accessToken: "home-token") }
        let client = Self.client(server, transport, authenticator: authenticator)
        client.setDefaultHeader("X-API-Key", value: "home-key")
        var policy = RedirectPolicy.default
        policy.headersRemovedAcrossOrigins.insert("X-API-Key")
        _ = try await client.get("get")
        _ = try await client.get("http://127.0.0.1:\(other.port)/get")
        _ = try await client.get("//127.0.0.1:\(other.port)/get")
        _ = try await client.get("http://localhost:\(server.port)/get")  // same port, another host
        #expect(
            server.receivedRequests.first { $0.path == "/get" && $0.headers["Host"]?.hasPrefix("127.0.0.1") == true }?
                .headers["Authorization"] == "Bearer home-token")
        for request in other.receivedRequests + server.receivedRequests.filter({ $0.headers["Host"]?.hasPrefix("localhost") == true }) {
            #expect(request.headers["Authorization"] == nil, "\(request)")
        }
        #expect(other.receivedRequests.count == 2)

        // Basic via the default header, with the other origin named: it goes there too.
        let named = Self.client(server, transport, origins: [URL(string: "http://127.0.0.1:\(other.port)")!])
        named.setAuthorizationHeader(username: "ada", password: "named-origin-pass")
        _ = try await named.get("http://127.0.0.1:\(other.port)/get")
        #expect(other.receivedRequests.last?.headers["Authorization"]?.hasPrefix("Basic ") == true)

        // A client without a base URL sends its authenticator's token to named origins only.
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.authenticator = authenticator
        let absolute = HTTPClient(configuration: configuration)
        _ = try await absolute.get("http://127.0.0.1:\(other.port)/headers")
        #expect(other.receivedRequests.last?.headers["Authorization"] == nil)
    }

    @Test(
        "A 401 with WWW-Authenticate: Bearer is unacceptableStatusCode(401) with its body on both transports",
        arguments: HTTPClient.TransportKind.testedKinds)
    func bearerChallengeParity(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/protected") { _ in .text("token required", status: 401).with(headers: ["WWW-Authenticate": #"Bearer realm="api""#]) }
        await #expect {
            _ = try await testClient(server, transport).get("protected")
        } throws: { error in
            guard case .unacceptableStatusCode(401, _, let data)? = error as? ConveyorError else { return false }
            return data.map { String(decoding: $0, as: UTF8.self) } == "token required"
        }
    }
}

/// Text Conveyor emits masks the credentials it sent by value; the client API's small promises.
@Suite("Hostile text and careless calls: masking by value, the empty path, cancelling a queue")
struct HostileTextTests {
    @Test("A token in a URL-valued query parameter and a Basic credential echoed in a body never reach the log")
    func maskedByValue() async throws {
        try await withServer { server, client in
            server.route("/echo-auth") { request in
                let header = request.headers["Authorization"] ?? ""
                let decoded =
                    Data(base64Encoded: String(header.dropFirst("Basic ".count))).map { String(decoding: $0, as: UTF8.self) } ?? ""
                return .text("you are \(decoded) (sent as \(header.dropFirst("Basic ".count)))")
            }
            let capture = NetworkLoggerTests.Capture(level: .debug, port: server.port)
            client.setAuthorizationHeader(username: "ada", password: "Echoed-Pa55word")
            _ = try await client.get("echo-auth")
            _ = try await client.get("get", parameters: ["to": "ftp://x/?token=Nested-Token-77"])
            let text = capture.lines.joined(separator: "\n")
            let base64 = Data("ada:Echoed-Pa55word".utf8).base64EncodedString()
            #expect(
                !text.contains("Echoed-Pa55word") && !text.contains(base64), "\(Excerpt.of(text, showing: ["Echoed-Pa55word", base64]))")
            #expect(!text.contains("Nested-Token-77"), "\(Excerpt.of(text, showing: ["Nested-Token-77"]))")
            #expect(text.contains("you are <redacted>"))
            // Error descriptions too.
            server.route("/echo-fail") { request in .text("denied for \(request.headers["Authorization"] ?? "")", status: 403) }
            await #expect {
                _ = try await client.get("echo-fail")
            } throws: { "\($0)".contains("denied for") && !"\($0)".contains(base64) }
        }
    }

    @Test("The empty path is the base URL, as in AFNetworking")
    func emptyPath() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/api/") { _ in .text("root") }
        let client = HTTPClient(baseURL: server.baseURL.appendingPathComponent("api"), configuration: .idleTimeout(10))
        #expect(try client.url(for: "").absoluteString == "http://127.0.0.1:\(server.port)/api/")
        #expect(String(decoding: try await client.get(""), as: UTF8.self) == "root")
    }

    @Test("cancelAllOperations: no matching queued operation reaches the server", arguments: HTTPClient.TransportKind.testedKinds)
    func cancelSweep(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let held = HeldRoute(server)
        let client = testClient(server, transport) { $0.maximumConcurrentOperations = 1 }
        let probes = (0..<20).map { _ in CompletionProbe() }
        for probe in probes { client.get("hold", success: probe.success, failure: probe.failure) }
        await held.arrived()
        client.cancelAllOperations(method: .get, path: "hold")
        held.release()
        for probe in probes { #expect(await probe.outcome().error?.isCancelled == true) }
        #expect(server.requestCount(path: "/hold") == 1)
    }
}

/// Long-lived streams and ordinary requests share a client without starving each other.
@Suite("Open streams do not starve ordinary requests")
struct StreamAllowanceTests {
    @Test(
        "Ten open streams with two connections per host and two operations: an ordinary GET still answers at once",
        arguments: HTTPClient.TransportKind.testedKinds)
    func streamsHaveTheirOwnAllowance(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let release = DispatchSemaphore(value: 0)
        let opened = AsyncStream.makeStream(of: Void.self)
        let ended = Lock(0)
        server.route("/feed") { _ in
            .init(
                headers: ["Content-Type": "text/event-stream"],
                body: .stream(chunked: true) { writer in
                    try writer.write(Data(": open\n\n".utf8))
                    opened.continuation.yield()
                    // Held open until the test ends: beside four CPU-bound processes the streams
                    // outlived a 20 s hold here and ended without the cancellation.
                    _ = release.wait(timeout: .now() + 120)
                    ended.withLock { $0 += 1 }
                })
        }
        let client = testClient(server, transport) { configuration in
            configuration.maximumConnectionsPerHost = 2
            configuration.maximumConcurrentOperations = 2
            // Long enough that the cancel below comes first on a loaded machine (at 5 s the
            // idle timeout sometimes ended the silent streams before the cancel was sent).
            configuration.idleTimeout = 120
        }
        var streams: [HTTPStream] = []
        for _ in 0..<10 { streams.append(try await client.stream("feed")) }
        var count = 0
        for await _ in opened.stream {
            count += 1
            if count == 10 { break }
        }
        // "At once" as an order of events, not a time: the GET is answered while all ten streams
        // still hold their connections and operations. Starved, it could only run once a stream
        // had ended (released below, or at the 120 s hold or idle timeout). A bound of 4 s failed
        // in all three runs on a machine with load average 10-20, and passed alone.
        #expect(try await client.get("bytes/10").count == 10)
        #expect(ended.withLock { $0 } == 0, "the GET was answered only after a stream had ended")
        // cancelAllOperations reaches streams too: each ends with the cancellation, and before
        // its 120 s idle timeout (the streams are silent after their first line, so the idle
        // timeout would end them too, with another error; the server ends them at 120 s without
        // one): here the bound is the claim itself.
        let cancelled = ContinuousClock.now
        client.cancelAllOperations(path: "feed")
        for stream in streams {
            await #expect {
                for try await _ in stream {}
            } throws: { error in
                (error as? ConveyorError)?.isCancelled == true
            }
        }
        #expect(ContinuousClock.now - cancelled < .seconds(60))
        for _ in 0..<10 { release.signal() }
    }
}

/// Numbers a server or a caller controls go through one saturating conversion.
@Suite("Hostile numbers: cache ages, timeouts and throttles never trap")
struct HostileNumberTests {
    @Test("Age: 10^20 on a revalidated entry saturates; Age: 7200.0 is ignored; Age: 7200, 0 reads the first")
    func absurdAge() async throws {
        try await withCachingServer { server, client, _ in
            server.route("/huge-age") { request in
                if request.headers["If-None-Match"] == "\"v1\"" { return .init(status: 304, headers: ["ETag": "\"v1\""]) }
                return .text("aged").with(headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=60", "Age": "99999999999999999999"])
            }
            server.route("/fractional-age") { _ in .text("fresh").with(headers: ["Cache-Control": "max-age=3600", "Age": "7200.0"]) }
            server.route("/two-ages") { _ in .text("stale").with(headers: ["Cache-Control": "max-age=3600", "Age": "7200, 0"]) }
            _ = try await client.response(method: .get, path: "huge-age")
            let revalidated = try await client.response(method: .get, path: "huge-age")
            #expect(revalidated.source == .revalidatedCache && String(decoding: revalidated.data, as: UTF8.self) == "aged")
            #expect(revalidated.head.value(forHTTPHeaderField: "Age").flatMap { Int($0) } != nil)
            for path in ["fractional-age", "two-ages"] {
                _ = try await client.response(method: .get, path: path)
                _ = try await client.response(method: .get, path: path)
            }
            #expect(server.requestCount(path: "/fractional-age") == 1)  // an invalid Age is ignored: still fresh
            #expect(server.requestCount(path: "/two-ages") == 2)  // the first value, 7200, counts: stale
        }
    }

    @Test(
        "Timeouts of .infinity or NaN and a throttle of 1e-300 s are clamped: requests work, nothing traps",
        arguments: HTTPClient.TransportKind.testedKinds)
    func absurdCallerValues(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        for idle in [TimeInterval.infinity, .nan, -1] {
            let client = testClient(server, transport) { configuration in
                configuration.idleTimeout = idle
                configuration.resourceTimeout = .infinity
            }
            #expect(try await client.get("bytes/5").count == 5)
            #expect(await client.drain(timeout: .infinity))
        }
        let client = testClient(server, transport)
        let request = try client.multipartRequest(method: .post, path: "post") { form in
            form.append(data: Data("x".utf8), name: "field")
            form.throttleBandwidth(packetSize: 16_384, delay: 1e-300)
        }
        let operation = client.operation(with: request, success: nil, failure: nil)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
    }
}

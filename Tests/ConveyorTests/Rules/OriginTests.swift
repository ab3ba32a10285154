import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Origin` is the one comparison of origins: the cache's invalidation (RFC 9111 §4.4) and its
/// keys, and the URLSession transport's connection admission ask it.
@Suite("Origins: one spelling-independent key for the cache and connection admission")
struct OriginTests {
    @Test("A URL's origin is read one way: case of scheme and host, and the default port, do not matter")
    func canonicalSpelling() throws {
        let pairs = [
            ("HTTP://LOCALHOST:80/x", "http://localhost/x"), ("https://Example.COM:443/a?b=C#d", "https://example.com/a?b=C#d"),
            ("http://example.com:8080/x", "http://example.com:8080/x"), ("http://[::ABCD]:80/x", "http://[::abcd]/x"),
            ("http://User@Example.com:80/x", "http://User@example.com/x"),
        ]
        for (spelled, canonical) in pairs {
            #expect(Origin.canonicalString(of: try #require(URL(string: spelled))) == canonical)
            #expect(Origin(URL(string: spelled)) == Origin(URL(string: canonical)))
        }
        // The path and query keep their case; other ports and schemes are other origins.
        #expect(Origin.canonicalString(of: URL(string: "http://h/X?Q=1")!) == "http://h/X?Q=1")
        #expect(!Origin.same(URL(string: "http://localhost/x"), URL(string: "http://localhost:8080/x")))
        #expect(!Origin.same(URL(string: "http://localhost/x"), URL(string: "https://localhost/x")))
        #expect(!Origin.same(URL(string: "http://localhost:443/x"), URL(string: "https://localhost/x")))
    }

    /// A stored fresh entry for `url`.
    private static func entry(_ url: String) -> CachedResponse {
        CachedResponse(url: URL(string: url)!, statusCode: 200, headers: ["Cache-Control": "max-age=600"], data: Data("kept".utf8))
    }

    private static func get(_ url: String) -> URLRequest { URLRequest(url: URL(string: url)!) }

    @Test("Invalidation: a Location or Content-Location of the request's origin, however spelled, removes the entry")
    func invalidationBySpelling() {
        let cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0)
        var post = URLRequest(url: URL(string: "http://localhost/make")!)
        post.httpMethod = "POST"
        for (stored, named) in [("http://localhost/x", "HTTP://LOCALHOST:80/x"), ("HTTP://LOCALHOST:80/y", "http://localhost/y")] {
            cache.store(Self.entry(stored))
            #expect(cache.cachedResponse(for: Self.get(stored)) != nil)
            for field in ["Location", "Content-Location"] {
                cache.store(Self.entry(stored))
                let response = HTTPResponseHead(url: post.url!, statusCode: 201, headers: [field: named])
                cache.invalidate(after: response, to: post)
                #expect(cache.cachedResponse(for: Self.get(stored)) == nil, "\(field): \(named) left \(stored)")
                #expect(cache.cachedResponse(for: Self.get(named)) == nil)
            }
        }
        // Another port or scheme is another origin: its entries stay (§4.4 "same origin").
        for other in ["http://localhost:8080/z", "https://localhost/z"] {
            cache.store(Self.entry(other))
            cache.invalidate(after: HTTPResponseHead(url: post.url!, statusCode: 201, headers: ["Location": other]), to: post)
            #expect(cache.cachedResponse(for: Self.get(other)) != nil, "\(other)")
        }
    }

    @Test(
        "Over sockets: a POST whose Location spells the cached URL's origin in capitals makes the next GET go to the server",
        arguments: HTTPClient.TransportKind.testedKinds)
    func invalidationOverSockets(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport) { $0.cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0) }
        server.countingRoute("/doc", headers: ["Cache-Control": "max-age=600"])
        let port = try #require(server.baseURL.port)
        server.route("/make") { _ in LocalHTTPServer.Response(status: 201, headers: ["Location": "HTTP://127.0.0.1:\(port)/doc"]) }
        _ = try await client.get("doc")
        _ = try await client.get("doc")
        #expect(server.requestCount(path: "/doc") == 1)
        _ = try await client.post("make", parameters: ["k": "v"])
        let again = try await client.response(method: .get, path: "doc")
        #expect(again.source == .network)
        #expect(server.requestCount(path: "/doc") == 2)
    }

    #if canImport(FoundationNetworking)
        /// What a transport task reported, in order.
        final class Events: TransportTaskDelegate {
            enum Event: Equatable { case awaits, left, completed }
            private let recorded = Lock<[Event]>([])
            private let completion = AsyncStream.makeStream(of: Void.self)

            var list: [Event] { recorded.withLock { $0 } }
            func completed() async { for await _ in completion.stream { return } }

            func transportDidReceive(response: HTTPResponseHead) {}
            func transportDidReceive(data: Data) {}
            func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
            func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
                (.cancelAuthenticationChallenge, nil)
            }
            func transportDidCollect(metrics: TransferMetrics) {}
            var transportWantsPause: Bool { false }
            func transportAwaitsConnection() { recorded.withLock { $0.append(.awaits) } }
            func transportDidLeaveConnectionQueue() { recorded.withLock { $0.append(.left) } }
            func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
                recorded.withLock { $0.append(.completed) }
                completion.continuation.yield()
            }
        }

        @Test("URLSession admission: two spellings of one origin share its one connection place; another origin does not wait")
        func admissionBySpelling() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let held = HeldRoute(server)
            let session = URLSessionConfiguration.ephemeral
            session.httpMaximumConnectionsPerHost = 1
            let transport = URLSessionTransport(configuration: session)
            defer { transport.invalidate() }
            let port = try #require(server.baseURL.port)
            let first = Events()
            let second = Events()
            let elsewhere = Events()
            _ = transport.startTask(
                for: URLRequest(url: URL(string: "http://localhost:\(port)/hold")!), bodyFile: nil, plan: AttemptPlan(idleTimeout: 60),
                delegate: first)
            await held.arrived()
            #expect(first.list == [.awaits, .left])
            // The place is taken: the same origin in capitals waits for it (admission is decided
            // inside startTask, so the events are known when it returns). The host, not the
            // scheme: corelibs URLSession never completes a task for `HTTP://`.
            _ = transport.startTask(
                for: URLRequest(url: URL(string: "http://LocalHost:\(port)/hold")!), bodyFile: nil, plan: AttemptPlan(idleTimeout: 60),
                delegate: second)
            #expect(second.list == [.awaits])
            // Another origin (port 9 on the loopback: refused) has a place of its own.
            _ = transport.startTask(
                for: URLRequest(url: URL(string: "http://127.0.0.1:9/")!), bodyFile: nil, plan: AttemptPlan(idleTimeout: 60),
                delegate: elsewhere)
            #expect(Array(elsewhere.list.prefix(2)) == [.awaits, .left])
            held.release()
            await first.completed()
            await held.arrived()
            held.release()
            await second.completed()
            await elsewhere.completed()
            #expect(second.list == [.awaits, .left, .completed])
            #expect(server.requestCount(path: "/hold") == 2)
        }
    #endif
}

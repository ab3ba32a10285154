import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// A caller's own conditional request against a stored response (RFC 9111 §4.3.2, RFC 9110
/// §13.1 and §13.2.2; issue #58, item 5): the cache evaluates `If-None-Match` and
/// `If-Modified-Since` and answers 304 when the condition is false, on both transports.
@Suite("HTTP cache: the caller's conditional requests")
struct HTTPCacheConditionalRequestTests {
    /// The stored response's `Last-Modified`, an hour ago (whole seconds, as HTTP dates are).
    static let lastModified = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3600).rounded(.down))

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// What one request got: the status, head and body; the number of requests the server saw.
    struct Answer {
        var status: Int?
        var head: HTTPResponseHead?
        var body: Data?
    }

    /// Sends GET `path` with `headers`, accepting 2xx and 304.
    private func send(_ client: HTTPClient, _ path: String, headers: HTTPHeaders) async throws -> Answer {
        let operation = client.operation(with: try client.request(method: .get, path: path, headers: headers), success: nil, failure: nil)
        operation.acceptableStatusCodes = IndexSet(200..<300).union(IndexSet(integer: 304))
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let outcome = await probe.outcome()
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        return Answer(status: operation.responseHead?.statusCode, head: operation.responseHead, body: outcome.data)
    }

    /// Runs `body` with a client on `transport` whose cache holds a fresh `/doc` (ETag `"v1"`,
    /// the given `Last-Modified`, one network request so far).
    private func withStoredDocument(
        _ transport: HTTPClient.TransportKind, headers: HTTPHeaders = [:],
        _ body: (LocalHTTPServer, HTTPClient) async throws -> Void
    ) async throws {
        let configure: (inout HTTPClient.Configuration) -> Void = {
            $0.transport = transport
            $0.monitorsReachability = false
        }
        try await withCachingServer(configure: configure) { server, client, _ in
            var stored: HTTPHeaders = [
                "Cache-Control": "max-age=600", "Content-Location": "/doc", "Vary": "Accept-Language", "X-Other": "not in a 304",
            ]
            for (name, value) in headers { stored[name] = value }
            server.countingRoute("/doc", headers: stored)
            let first = try await send(client, "doc", headers: [:])
            #expect(first.status == 200)
            try await body(server, client)
        }
    }

    @Test(
        "If-None-Match matching a fresh stored ETag gets a 304 from the cache, with the validator fields and no body",
        arguments: HTTPClient.TransportKind.testedKinds)
    func ifNoneMatch304(transport: HTTPClient.TransportKind) async throws {
        try await withStoredDocument(transport, headers: ["ETag": "\"v1\"", "Expires": "Thu, 01 Jan 2099 00:00:00 GMT"]) { server, client in
            for value in ["\"v1\"", "W/\"v1\"", "\"other\", \"v1\"", "*"] {
                let answer = try await send(client, "doc", headers: ["If-None-Match": value])
                #expect(answer.status == 304, "\(value)")
                #expect(answer.body == nil || answer.body?.isEmpty == true, "\(value)")
                let head = answer.head
                #expect(head?.value(forHTTPHeaderField: "ETag") == "\"v1\"")
                #expect(head?.value(forHTTPHeaderField: "Cache-Control") == "max-age=600")
                #expect(head?.value(forHTTPHeaderField: "Expires") == "Thu, 01 Jan 2099 00:00:00 GMT")
                #expect(head?.value(forHTTPHeaderField: "Content-Location") == "/doc")
                #expect(head?.value(forHTTPHeaderField: "Vary") == "Accept-Language")
                #expect(head?.value(forHTTPHeaderField: "Date") != nil)
                #expect(head?.value(forHTTPHeaderField: "X-Other") == nil)
                #expect(head?.value(forHTTPHeaderField: "Content-Type") == nil)
            }
            #expect(server.requestCount(path: "/doc") == 1)
        }
    }

    @Test("If-None-Match naming other tags gets the stored 200", arguments: HTTPClient.TransportKind.testedKinds)
    func ifNoneMatchOther(transport: HTTPClient.TransportKind) async throws {
        try await withStoredDocument(transport, headers: ["ETag": "\"v1\""]) { server, client in
            let answer = try await send(client, "doc", headers: ["If-None-Match": "\"v2\", W/\"v3\""])
            #expect(answer.status == 200)
            #expect(answer.body.map { String(decoding: $0, as: UTF8.self) } == "/doc #1")
            #expect(server.requestCount(path: "/doc") == 1)
        }
    }

    @Test("If-None-Match wins over If-Modified-Since (RFC 9110 §13.2.2)", arguments: HTTPClient.TransportKind.testedKinds)
    func precedence(transport: HTTPClient.TransportKind) async throws {
        let modified = Self.httpDate(Self.lastModified)
        try await withStoredDocument(transport, headers: ["ETag": "\"v1\"", "Last-Modified": modified]) { server, client in
            // The tag differs: 200, although If-Modified-Since alone would give a 304.
            let differs = try await send(client, "doc", headers: ["If-None-Match": "\"v2\"", "If-Modified-Since": modified])
            #expect(differs.status == 200)
            // The tag matches: 304, although If-Modified-Since alone would give the 200.
            let older = Self.httpDate(Self.lastModified.addingTimeInterval(-86_400))
            let matches = try await send(client, "doc", headers: ["If-None-Match": "\"v1\"", "If-Modified-Since": older])
            #expect(matches.status == 304)
            #expect(server.requestCount(path: "/doc") == 1)
        }
    }

    @Test(
        "If-Modified-Since is compared with the stored Last-Modified: not later gives a 304, earlier the 200",
        arguments: HTTPClient.TransportKind.testedKinds)
    func ifModifiedSince(transport: HTTPClient.TransportKind) async throws {
        try await withStoredDocument(transport, headers: ["Last-Modified": Self.httpDate(Self.lastModified)]) { server, client in
            let cases: [(String, Int)] = [
                (Self.httpDate(Self.lastModified), 304),
                (Self.httpDate(Self.lastModified.addingTimeInterval(60)), 304),
                (Self.httpDate(Self.lastModified.addingTimeInterval(-60)), 200),
                ("not a date", 200),
            ]
            for (value, status) in cases {
                let answer = try await send(client, "doc", headers: ["If-Modified-Since": value])
                #expect(answer.status == status, "\(value)")
            }
            #expect(server.requestCount(path: "/doc") == 1)
        }
    }

    @Test("Without Last-Modified, If-Modified-Since is compared with the stored Date", arguments: HTTPClient.TransportKind.testedKinds)
    func ifModifiedSinceDate(transport: HTTPClient.TransportKind) async throws {
        // Recent enough for max-age=600 to keep the response fresh.
        let date = Self.lastModified.addingTimeInterval(3600 - 10)
        try await withStoredDocument(transport, headers: ["Date": Self.httpDate(date)]) { server, client in
            let same = try await send(client, "doc", headers: ["If-Modified-Since": Self.httpDate(date)])
            #expect(same.status == 304)
            let earlier = try await send(client, "doc", headers: ["If-Modified-Since": Self.httpDate(date.addingTimeInterval(-60))])
            #expect(earlier.status == 200)
            #expect(server.requestCount(path: "/doc") == 1)
        }
    }

    @Test(
        "A stale stored response: the caller's condition goes to the server and its 304 reaches the caller as a 304",
        arguments: HTTPClient.TransportKind.testedKinds)
    func staleForwarded(transport: HTTPClient.TransportKind) async throws {
        let configure: (inout HTTPClient.Configuration) -> Void = {
            $0.transport = transport
            $0.monitorsReachability = false
        }
        try await withCachingServer(configure: configure) { server, client, cache in
            let hits = Lock(0)
            server.route("/stale") { request in
                let count = hits.withLock {
                    $0 += 1
                    return $0
                }
                if count > 1, request.headers["If-None-Match"] == "\"s1\"" {
                    return .init(status: 304, headers: ["ETag": "\"s1\"", "Cache-Control": "max-age=600"])
                }
                return .text("stale body").with(headers: ["ETag": "\"s1\"", "Cache-Control": "max-age=0"])
            }
            let first = try await send(client, "stale", headers: [:])
            #expect(first.status == 200)
            let answer = try await send(client, "stale", headers: ["If-None-Match": "\"s1\""])
            #expect(answer.status == 304)
            #expect(answer.body == nil || answer.body?.isEmpty == true)
            #expect(server.receivedRequests.last?.headers["If-None-Match"] == "\"s1\"")
            // The 304 freshened the stored response (§4.3.4): the next plain GET is answered
            // from the cache with the stored body.
            let stored = try #require(cache.cachedResponse(for: try client.request(method: .get, path: "stale")))
            #expect(stored.headers["Cache-Control"] == "max-age=600")
            let plain = try await send(client, "stale", headers: [:])
            #expect(plain.status == 200 && plain.body.map { String(decoding: $0, as: UTF8.self) } == "stale body")
            #expect(server.requestCount(path: "/stale") == 2)
        }
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// RFC 9111 (and RFC 5861) behaviour of `HTTPCache` as a browser's private cache has it, against
/// a real server on both transports (issue 28).
@Suite("HTTP cache conformance (RFC 9111, RFC 5861)")
struct HTTPCacheConformanceTests {
    /// Runs `body` with a server and a client on `transport` using a scratch cache.
    private func withCache(
        _ transport: HTTPClient.TransportKind, _ body: (LocalHTTPServer, HTTPClient, HTTPCache) async throws -> Void
    ) async throws {
        let configure: (inout HTTPClient.Configuration) -> Void = { configuration in
            configuration.transport = transport
            configuration.monitorsReachability = false
        }
        try await withCachingServer(configure: configure, body)
    }

    /// Sends GET `path` and returns the status and where the response came from; an
    /// unacceptable status is returned, not thrown.
    private func fetch(_ client: HTTPClient, _ path: String, headers: HTTPHeaders = [:], method: HTTPMethod = .get) async throws
        -> (status: Int, source: HTTPCache.ResponseSource?, head: HTTPResponseHead?)
    {
        do {
            let response = try await client.response(method: method, path: path, headers: headers)
            return (response.statusCode, response.source, response.head)
        } catch let error as ConveyorError {
            guard let status = error.statusCode else { throw error }
            return (status, nil, nil)
        }
    }

    @Test(
        "Expires: only IMF-fixdate, RFC 850 and asctime are dates; anything else is already expired",
        arguments: HTTPClient.TransportKind.testedKinds)
    func expiresParsing(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            let cases: [(String, String, fresh: Bool)] = [
                ("imf", "Thu, 18 Aug 2050 02:01:18 GMT", true),
                ("rfc850", "Thursday, 18-Aug-50 02:01:18 GMT", true),
                ("asctime", "Thu Aug 18 02:01:18 2050", true),
                ("asctime-one-digit-day", "Thu Aug  8 02:01:18 2050", true),
                ("no-comma", "Thu 18 Aug 2050 02:01:18 GMT", false),
                ("double-space", "Thu, 18 Aug  2050 02:01:18 GMT", false),
                ("one-digit-hour", "Thu, 18 Aug 2050 2:01:18 GMT", false),
            ]
            for (name, expires, _) in cases { server.countingRoute("/\(name)", headers: ["Expires": expires]) }
            for (name, _, fresh) in cases {
                _ = try await fetch(client, name)
                _ = try await fetch(client, name)
                #expect(server.requestCount(path: "/\(name)") == (fresh ? 1 : 2), "\(name)")
            }
        }
    }

    @Test("Hop-by-hop fields and the fields Connection names are not stored", arguments: HTTPClient.TransportKind.testedKinds)
    func hopByHop(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, cache in
            server.countingRoute(
                "/hop",
                headers: [
                    "Cache-Control": "max-age=60", "Connection": "X-Private", "X-Private": "a", "Keep-Alive": "timeout=5",
                    "Proxy-Connection": "keep-alive", "TE": "trailers", "X-Kept": "yes",
                ])
            _ = try await fetch(client, "hop")
            let stored = try #require(cache.cachedResponse(for: try client.request(method: .get, path: "hop")))
            for name in ["Connection", "X-Private", "Keep-Alive", "Proxy-Connection", "TE", "Transfer-Encoding", "Upgrade"] {
                #expect(stored.headers[name] == nil, "\(name)")
            }
            #expect(stored.headers["X-Kept"] == "yes")
        }
    }

    @Test("Any final status with max-age is served from cache while fresh", arguments: HTTPClient.TransportKind.testedKinds)
    func explicitFreshnessAnyStatus(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            for status in [299, 400, 499, 500, 502, 503, 504, 599] {
                server.route("/status-\(status)") { _ in
                    .text("status \(status)", status: status).with(headers: ["Cache-Control": "max-age=60"])
                }
                let first = try await fetch(client, "status-\(status)")
                let second = try await fetch(client, "status-\(status)")
                #expect(first.status == status && second.status == status)
                #expect(server.requestCount(path: "/status-\(status)") == 1, "\(status)")
            }
            // Without explicit freshness a 500 is not stored, validator or not.
            server.route("/plain-500") { _ in .text("x", status: 500).with(headers: ["ETag": "\"e\""]) }
            _ = try await fetch(client, "plain-500")
            _ = try await fetch(client, "plain-500")
            #expect(server.requestCount(path: "/plain-500") == 2)
        }
    }

    @Test(
        "must-understand: an understood status is stored despite no-store; an unknown one is not",
        arguments: HTTPClient.TransportKind.testedKinds)
    func mustUnderstand(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.countingRoute("/understood", headers: ["Cache-Control": "max-age=60, no-store, must-understand"])
            server.route("/unknown") { _ in .text("x", status: 299).with(headers: ["Cache-Control": "max-age=60, must-understand"]) }
            for path in ["understood", "unknown"] {
                _ = try await fetch(client, path)
                _ = try await fetch(client, path)
            }
            #expect(server.requestCount(path: "/understood") == 1)
            #expect(server.requestCount(path: "/unknown") == 2)
        }
    }

    @Test(
        "stale-while-revalidate: inside the window the stale entry answers and one revalidation runs; after it, a fetch",
        arguments: HTTPClient.TransportKind.testedKinds)
    func staleWhileRevalidate(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            let revalidations = AsyncStream.makeStream(of: Void.self)
            let revalidationCount = Counter()
            server.route("/swr") { request in
                if request.headers["If-None-Match"] == "\"v1\"" {
                    revalidationCount.increment()
                    revalidations.continuation.yield()
                    return .init(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=60"])
                }
                return .text("swr body").with(headers: [
                    "ETag": "\"v1\"", "Cache-Control": "max-age=1, stale-while-revalidate=600", "Age": "5",
                ])
            }
            _ = try await fetch(client, "swr")
            let second = try await fetch(client, "swr")
            #expect(second.status == 200 && second.source == .cache)
            for await _ in revalidations.stream { break }  // the background revalidation reached the server
            // One: not again within a grace after the first (a duplicate would follow it within
            // milliseconds; load can only hide one, not fail a correct cache). The grace is no
            // synchronisation — the event awaited above already came.
            try await Task.sleep(for: CompletionProbe.duplicateGrace)
            #expect(revalidationCount.count == 1 && server.requestCount(path: "/swr") == 2)

            server.countingRoute("/swr-past", headers: ["Cache-Control": "max-age=1, stale-while-revalidate=2", "Age": "100"])
            _ = try await fetch(client, "swr-past")
            let late = try await fetch(client, "swr-past")
            #expect(late.source == .network && server.requestCount(path: "/swr-past") == 2)
        }
    }

    @Test("stale-if-error: a 503 is answered with the stale stored response", arguments: HTTPClient.TransportKind.testedKinds)
    func staleIfError(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            let calls = Lock(0)
            server.route("/sie") { _ in
                let call = calls.withLock {
                    $0 += 1
                    return $0
                }
                if call == 1 { return .text("good").with(headers: ["Cache-Control": "max-age=1, stale-if-error=600", "Age": "5"]) }
                return .text("down", status: 503)
            }
            _ = try await fetch(client, "sie")
            let second = try await client.response(method: .get, path: "sie")
            #expect(second.statusCode == 200 && String(decoding: second.data, as: UTF8.self) == "good" && second.source == .staleOnError)
            #expect(server.requestCount(path: "/sie") == 2)
        }
    }

    /// A route whose first answer is `body` with `headers` and whose later ones are `fault`.
    private func failingAfterFirst(_ server: LocalHTTPServer, _ path: String, headers: HTTPHeaders, fault: LocalHTTPServer.Fault) {
        let calls = Lock(0)
        server.route(path) { _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            guard call == 1 else { return .init(body: .fault(fault)) }
            return .text("stored \(path)").with(headers: headers)
        }
    }

    @Test(
        "Disconnected (§4.2.4): a failed connection is answered with the stale response; must-revalidate and no-cache give a 504",
        arguments: HTTPClient.TransportKind.testedKinds)
    func staleWhenDisconnected(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            let stale: HTTPHeaders = ["Cache-Control": "max-age=1", "Age": "30", "ETag": "\"s\""]
            failingAfterFirst(server, "/stale-close", headers: stale, fault: .closeBeforeHeaders)
            failingAfterFirst(server, "/stale-reset", headers: stale, fault: .reset)
            failingAfterFirst(
                server, "/stale-close-must-revalidate", headers: ["Cache-Control": "max-age=1, must-revalidate", "Age": "30"],
                fault: .closeBeforeHeaders)
            failingAfterFirst(
                server, "/stale-close-no-cache", headers: ["Cache-Control": "no-cache", "ETag": "\"n\""], fault: .closeBeforeHeaders)
            server.countingRoute("/stale-refused", headers: ["Cache-Control": "max-age=1", "Age": "30"])
            for path in ["stale-close", "stale-reset", "stale-close-must-revalidate", "stale-close-no-cache", "stale-refused"] {
                #expect(try await fetch(client, path).status == 200, "\(path)")
            }
            for path in ["stale-close", "stale-reset"] {
                let answer = try await client.response(method: .get, path: path)
                #expect(answer.statusCode == 200 && String(decoding: answer.data, as: UTF8.self) == "stored /\(path)", "\(path)")
                #expect(answer.source == .staleOnError, "\(path)")
                // Asked again (a transport may retry an idempotent request once on a fresh connection).
                #expect(server.requestCount(path: "/\(path)") >= 2, "\(path)")
            }
            // The stored response forbids serving it stale: an error that is a 504, never the stored body.
            for path in ["stale-close-must-revalidate", "stale-close-no-cache"] {
                do {
                    let answer = try await client.response(method: .get, path: path)
                    Issue.record("\(path): answered \(answer.statusCode) \(String(decoding: answer.data, as: UTF8.self))")
                } catch let error as ConveyorError {
                    guard case .unacceptableStatusCode(let status, _, let data) = error else {
                        Issue.record("\(path): \(error)")
                        continue
                    }
                    #expect(status == 504, "\(path)")
                    #expect(!String(decoding: data ?? Data(), as: UTF8.self).contains("stored /"), "\(path)")
                }
                #expect(server.requestCount(path: "/\(path)") >= 2, "\(path)")
            }
            // Refused: nothing listens any more.
            server.stop()
            let refused = try await client.response(method: .get, path: "stale-refused")
            #expect(String(decoding: refused.data, as: UTF8.self) == "/stale-refused #1" && refused.source == .staleOnError)
        }
    }

    @Test(
        "Disconnected, with the setting off: the transport's error, not the stale response", arguments: HTTPClient.TransportKind.testedKinds
    )
    func staleWhenDisconnectedOff(transport: HTTPClient.TransportKind) async throws {
        let cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0, answersStaleWhenDisconnected: false)
        #expect(HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0).answersStaleWhenDisconnected)
        let configure: (inout HTTPClient.Configuration) -> Void = { configuration in
            configuration.transport = transport
            configuration.monitorsReachability = false
            configuration.cache = cache
        }
        try await withCachingServer(configure: configure) { server, client, _ in
            failingAfterFirst(server, "/off-close", headers: ["Cache-Control": "max-age=1", "Age": "30"], fault: .closeBeforeHeaders)
            failingAfterFirst(
                server, "/off-explicit", headers: ["Cache-Control": "max-age=1, stale-if-error=600", "Age": "30"],
                fault: .closeBeforeHeaders)
            _ = try await fetch(client, "off-close")
            _ = try await fetch(client, "off-explicit")
            await #expect {
                _ = try await client.response(method: .get, path: "off-close")
            } throws: { error in
                (error as? ConveyorError)?.connectivityFailure == .connectionLost
            }
            // `stale-if-error` is the response's own permission: it still answers.
            #expect(try await client.response(method: .get, path: "off-explicit").source == .staleOnError)
        }
    }

    @Test(
        "Request directives: only-if-cached, max-stale, Pragma without Cache-Control; immutable on a reload",
        arguments: HTTPClient.TransportKind.testedKinds)
    func requestDirectives(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.countingRoute("/nothing", headers: ["Cache-Control": "max-age=60"])
            let onlyCached = try await fetch(client, "nothing", headers: ["Cache-Control": "only-if-cached"])
            #expect(onlyCached.status == 504 && server.requestCount(path: "/nothing") == 0)

            server.countingRoute("/stale", headers: ["Cache-Control": "max-age=1", "Age": "30"])
            _ = try await fetch(client, "stale")
            #expect(try await fetch(client, "stale", headers: ["Cache-Control": "max-stale"]).source == .cache)
            #expect(try await fetch(client, "stale", headers: ["Cache-Control": "max-stale=5"]).source == .network)

            server.countingRoute("/pragma", headers: ["Cache-Control": "max-age=60"])
            _ = try await fetch(client, "pragma")
            #expect(try await fetch(client, "pragma", headers: ["Pragma": "no-cache"]).source == .network)
            #expect(try await fetch(client, "pragma", headers: ["Pragma": "no-cache", "Cache-Control": "max-age=60"]).source == .cache)

            server.countingRoute("/immutable", headers: ["Cache-Control": "max-age=3600, immutable"])
            _ = try await fetch(client, "immutable")
            #expect(try await fetch(client, "immutable", headers: ["Cache-Control": "max-age=0"]).source == .cache)
            #expect(try await fetch(client, "immutable", headers: ["Cache-Control": "no-cache"]).source == .network)
        }
    }

    @Test("no-cache=\"field\": the response is reused, the named field is not stored", arguments: HTTPClient.TransportKind.testedKinds)
    func qualifiedNoCache(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.countingRoute("/qualified", headers: ["Cache-Control": #"max-age=60, no-cache="X-Secret, X-Other""#, "X-Secret": "s"])
            _ = try await fetch(client, "qualified")
            let second = try await fetch(client, "qualified")
            #expect(second.source == .cache && server.requestCount(path: "/qualified") == 1)
            #expect(second.head?.value(forHTTPHeaderField: "X-Secret") == nil)
        }
    }

    @Test(
        "Vary compares values as their syntax allows: order, spaces and case of Accept-Language",
        arguments: HTTPClient.TransportKind.testedKinds)
    func varyNormalisation(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.countingRoute("/negotiated", headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"])
            _ = try await fetch(client, "negotiated", headers: ["Accept-Language": "en-US, fr"])
            #expect(try await fetch(client, "negotiated", headers: ["Accept-Language": "fr,en-us"]).source == .cache)
            #expect(try await fetch(client, "negotiated", headers: ["Accept-Language": "de"]).source == .network)
        }
    }

    @Test(
        "A status the cache does not know (599) with public and no explicit lifetime gets a heuristic one",
        arguments: HTTPClient.TransportKind.testedKinds)
    func heuristicUnknownStatusWithPublic(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            let modified = HTTPCacheFreshnessTests.httpDate(-100_000)  // heuristic: 10 %, 10,000 s
            server.route("/heuristic-599") { _ in
                .text("599", status: 599).with(headers: ["Cache-Control": "public", "Last-Modified": modified])
            }
            server.route("/heuristic-599-plain") { _ in .text("599", status: 599).with(headers: ["Last-Modified": modified]) }
            for path in ["heuristic-599", "heuristic-599-plain"] {
                let first = try await fetch(client, path)
                let second = try await fetch(client, path)
                #expect(first.status == 599 && second.status == 599, "\(path)")
            }
            #expect(server.requestCount(path: "/heuristic-599") == 1)
            // Without `public` an unknown status is not heuristically cacheable.
            #expect(server.requestCount(path: "/heuristic-599-plain") == 2)
        }
    }

    @Test(
        "Vary: Accept-Language compares language ranges and q-values, not strings",
        arguments: HTTPClient.TransportKind.testedKinds)
    func varyLanguageRanges(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.countingRoute("/languages", headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"])
            _ = try await fetch(client, "languages", headers: ["Accept-Language": "en, fr;q=0.5"])
            for same in ["en,fr;q=0.5", "fr;q=0.50, en", "EN;q=1.0 ,fr; q=0.500", "en;q=1,fr;Q=.5"] {
                #expect(try await fetch(client, "languages", headers: ["Accept-Language": same]).source == .cache, "\(same)")
            }
            #expect(server.requestCount(path: "/languages") == 1)
            for other in ["en, fr;q=0.4", "en;q=0.5, fr", "en"] {
                #expect(try await fetch(client, "languages", headers: ["Accept-Language": other]).source == .network, "\(other)")
            }
        }
    }

    @Test(
        "Cache-Control parsing: the first of two max-age counts; a malformed max-age (space around =, 3600.0, 3600a) means stale",
        arguments: HTTPClient.TransportKind.testedKinds)
    func maxAgeParsing(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            // A far Expires and an old Last-Modified would make each response fresh without its max-age.
            let fallbacks: HTTPHeaders = [
                "Expires": "Thu, 18 Aug 2050 02:01:18 GMT", "Last-Modified": HTTPCacheFreshnessTests.httpDate(-1_000_000),
            ]
            let cases: [(String, String, cached: Bool)] = [
                ("two-fresh-stale", "max-age=1800, max-age=1", true),
                ("two-stale-fresh", "max-age=1, max-age=1800", false),
                ("space-before-equals", "max-age =3600", false),
                ("space-after-equals", "max-age= 3600", false),
                ("decimal", "max-age=3600.0", false),
                ("trailing-alpha", "max-age=3600a", false),
                ("quoted", #"max-age="3600""#, true),
                ("leading-zero", "max-age=003600", true),
            ]
            for (name, control, _) in cases {
                var headers = fallbacks
                headers["Cache-Control"] = control
                headers["Age"] = "5"  // past max-age=1
                server.countingRoute("/parse-\(name)", headers: headers)
            }
            for (name, _, cached) in cases {
                _ = try await fetch(client, "parse-\(name)")
                #expect(try await fetch(client, "parse-\(name)").source == (cached ? .cache : .network), "\(name)")
            }
        }
    }

    @Test(
        "Age parsing: an invalid Age (7200;foo, 7200.0) is ignored; of a list the first member counts",
        arguments: HTTPClient.TransportKind.testedKinds)
    func ageParsing(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            let cases: [(String, String, cached: Bool)] = [
                ("parameter", "7200;foo", true), ("float", "7200.0", true), ("list", "7200, 0", false), ("valid", "7200", false),
            ]
            for (name, age, _) in cases { server.countingRoute("/age-\(name)", headers: ["Cache-Control": "max-age=3600", "Age": age]) }
            for (name, _, cached) in cases {
                _ = try await fetch(client, "age-\(name)")
                #expect(try await fetch(client, "age-\(name)").source == (cached ? .cache : .network), "\(name)")
            }
        }
    }

    @Test(
        "A request's Pragma: no-cache counts as Cache-Control: no-cache only when the request has no Cache-Control",
        arguments: HTTPClient.TransportKind.testedKinds)
    func requestPragma(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.countingRoute("/pragma-request", headers: ["Cache-Control": "max-age=3600"])
            _ = try await fetch(client, "pragma-request")
            #expect(try await fetch(client, "pragma-request", headers: ["Pragma": "no-cache"]).source == .network)
            #expect(try await fetch(client, "pragma-request", headers: ["Pragma": "No-Cache, x"]).source == .network)
            #expect(
                try await fetch(client, "pragma-request", headers: ["Pragma": "no-cache", "Cache-Control": "max-stale"]).source == .cache)
            #expect(server.requestCount(path: "/pragma-request") == 3)
        }
    }

    @Test(
        "If-None-Match is sent with a stored variant's ETag only for that variant, never another Vary'd one's",
        arguments: HTTPClient.TransportKind.testedKinds)
    func conditionalAcrossVariants(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.route("/variants") { request in
                let value = request.headers["Abc"] ?? "none"
                if request.headers["If-None-Match"] == "\"e-\(value)\"" {
                    return .init(status: 304, headers: ["ETag": "\"e-\(value)\"", "Vary": "Abc"])
                }
                return .text("variant \(value)").with(headers: [
                    "ETag": "\"e-\(value)\"", "Vary": "Abc", "Cache-Control": "max-age=1", "Age": "5",
                ])
            }
            _ = try await fetch(client, "variants", headers: ["Abc": "123"])
            _ = try await fetch(client, "variants", headers: ["Abc": "456"])
            let again = try await fetch(client, "variants", headers: ["Abc": "123"])
            #expect(again.source == .revalidatedCache)
            let sent = server.receivedRequests.filter { $0.path == "/variants" }.map { $0.headers["If-None-Match"] }
            #expect(sent == [nil, nil, "\"e-123\""])
        }
    }

    @Test(
        "A POST response with explicit freshness and Content-Location equal to its URL answers a later GET (RFC 9111 §4)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func postAnswersGet(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            let cases: [(String, HTTPHeaders, cached: Bool)] = [
                ("post-same", ["Cache-Control": "max-age=3600", "Content-Location": "/post-same"], true),
                (
                    "post-absolute",
                    ["Cache-Control": "max-age=3600", "Content-Location": server.baseURL.absoluteString + "post-absolute"], true
                ),
                ("post-elsewhere", ["Cache-Control": "max-age=3600", "Content-Location": "/other"], false),
                ("post-no-freshness", ["Content-Location": "/post-no-freshness", "ETag": "\"p\""], false),
            ]
            for (name, headers, _) in cases {
                server.route("/\(name)") { request in
                    if request.method == "POST" { return .text("posted").with(headers: headers) }
                    return .text("got").with(headers: ["Cache-Control": "max-age=3600"])
                }
            }
            for (name, _, cached) in cases {
                _ = try await fetch(client, name, method: .post)
                let get = try await client.response(method: .get, path: name)
                #expect(get.source == (cached ? .cache : .network), "\(name)")
                #expect(String(decoding: get.data, as: UTF8.self) == (cached ? "posted" : "got"), "\(name)")
            }
        }
    }

    @Test("A HEAD response freshens the stored GET response's fields (§4.3.5)", arguments: HTTPClient.TransportKind.testedKinds)
    func headFreshensGet(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.route("/doc") { request in
                let version = request.method == "HEAD" ? "2" : "1"
                return .text("document").with(headers: ["Cache-Control": "max-age=60", "ETag": "\"d1\"", "X-Version": version])
            }
            _ = try await fetch(client, "doc")
            _ = try await fetch(client, "doc", headers: ["Cache-Control": "no-cache"], method: .head)
            let after = try await fetch(client, "doc")
            #expect(after.source == .cache && after.head?.value(forHTTPHeaderField: "X-Version") == "2")
        }
    }

    @Test("A Range request is answered with a 206 from a stored complete response", arguments: HTTPClient.TransportKind.testedKinds)
    func rangeFromStoredResponse(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.route("/digits") { request in
                // The server itself ignores Range: every 206 below comes from the cache.
                .text("0123456789").with(headers: ["Cache-Control": "max-age=60", "ETag": "\"d\""])
            }
            _ = try await fetch(client, "digits")
            let operation = client.operation(
                with: try client.request(method: .get, path: "digits", headers: ["Range": "bytes=2-5"]), success: nil, failure: nil)
            operation.acceptableStatusCodes = [206]
            let probe = CompletionProbe()
            probe.attach(to: operation)
            client.enqueue(operation)
            #expect(await probe.outcome().data.map { String(decoding: $0, as: UTF8.self) } == "2345")
            #expect(operation.responseHead?.statusCode == 206)
            #expect(operation.responseHead?.value(forHTTPHeaderField: "Content-Range") == "bytes 2-5/10")
            let suffix = try await fetch(client, "digits", headers: ["Range": "bytes=-3"])
            #expect(suffix.status == 206 && server.requestCount(path: "/digits") == 1)
            // An If-Range naming another representation: the whole stored 200, as a server would send.
            let other = try await fetch(client, "digits", headers: ["Range": "bytes=0-1", "If-Range": "\"other\""])
            #expect(other.status == 200 && other.head?.value(forHTTPHeaderField: "Content-Range") == nil)
        }
    }

    @Test(
        "A stored 206 answers a later Range request inside its range, never a request outside it or a whole GET",
        arguments: HTTPClient.TransportKind.testedKinds)
    func storedPartialContent(transport: HTTPClient.TransportKind) async throws {
        try await withCache(transport) { server, client, _ in
            server.route("/partial") { request in
                .ranged(Data("0123456789".utf8), etag: "\"r\"", for: request).with(headers: ["Cache-Control": "max-age=3600"])
            }
            func ranged(_ range: String) async throws -> (
                status: Int, text: String, contentRange: String?, source: HTTPCache.ResponseSource
            ) {
                let response = try await client.response(method: .get, path: "partial", headers: ["Range": range])
                return (
                    response.statusCode, String(decoding: response.data, as: UTF8.self),
                    response.head.value(forHTTPHeaderField: "Content-Range"), response.source
                )
            }
            let first = try await ranged("bytes=4-")
            #expect(first.status == 206 && first.text == "456789" && first.source == .network)
            let cases: [(String, String, String)] = [
                ("bytes=4-", "456789", "bytes 4-9/10"), ("bytes=6-8", "678", "bytes 6-8/10"), ("bytes=-3", "789", "bytes 7-9/10"),
            ]
            for (range, text, contentRange) in cases {
                let answer = try await ranged(range)
                #expect(answer.status == 206 && answer.text == text && answer.contentRange == contentRange, "\(range)")
                #expect(answer.source == .cache, "\(range)")
            }
            #expect(server.requestCount(path: "/partial") == 1)
            // Outside the stored part: the server.
            let outside = try await ranged("bytes=2-5")
            #expect(outside.text == "2345" && outside.source == .network && server.requestCount(path: "/partial") == 2)
            // A stored part never answers a request for the whole.
            let whole = try await client.response(method: .get, path: "partial")
            #expect(whole.statusCode == 200 && String(decoding: whole.data, as: UTF8.self) == "0123456789" && whole.source == .network)
            #expect(try await client.response(method: .head, path: "partial").source == .cache)  // the stored 200 now
        }
    }

    @Test(
        "A 416 to a Range request is not stored: it never answers a later GET nor replaces a stored complete response",
        arguments: HTTPClient.TransportKind.testedKinds)
    func unsatisfiableRangeNotStored(transport: HTTPClient.TransportKind) async throws {
        // Found by the independent attack on 0.3.0's cache: a stored 416 answered every later
        // request for the URL, and replaced the stored 200.
        try await withCache(transport) { server, client, _ in
            let body = Data("0123456789".utf8)
            server.route("/range-refused") { request in
                guard request.headers["Range"] != nil else {
                    return .init(headers: ["Cache-Control": "max-age=3600"], body: .data(body))
                }
                return .init(status: 416, headers: ["Cache-Control": "max-age=3600", "Content-Range": "bytes */10"], body: .data(Data()))
            }
            await #expect(throws: ConveyorError.self) {
                try await client.response(method: .get, path: "range-refused", headers: ["Range": "bytes=50-"])
            }
            let whole = try await client.response(method: .get, path: "range-refused")
            #expect(whole.statusCode == 200 && whole.data == body && whole.source == .network)
            // With the complete response stored, a refused range does not replace it.
            await #expect(throws: ConveyorError.self) {
                try await client.response(
                    method: .get, path: "range-refused", headers: ["Range": "bytes=50-", "Cache-Control": "no-cache"])
            }
            let again = try await client.response(method: .get, path: "range-refused")
            #expect(again.statusCode == 200 && again.data == body && again.source == .cache)
            #expect(server.requestCount(path: "/range-refused") == 3)
        }
    }

    @Test("An unknown content coding is handed over as received, field included, and stored so (curl transport)")
    func unknownContentCoding() async throws {
        try await withCache(.curl) { server, client, _ in
            server.route("/foo-coded") { _ in
                .init(headers: ["Content-Encoding": "foo", "Cache-Control": "max-age=60"], body: .data(Data("not really foo".utf8)))
            }
            let first = try await client.response(method: .get, path: "foo-coded")
            #expect(String(decoding: first.data, as: UTF8.self) == "not really foo")
            #expect(first.head.value(forHTTPHeaderField: "Content-Encoding") == "foo")
            let second = try await client.response(method: .get, path: "foo-coded")
            #expect(second.source == .cache && second.head.value(forHTTPHeaderField: "Content-Encoding") == "foo")
            #expect(second.data == first.data)
        }
    }
}

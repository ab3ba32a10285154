import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// A finding of the independent attack on issue 58 (RFC 9111 §4.3.4): the cache's own
/// revalidation of a stored response with `ETag: "s1"` got a 304 carrying `ETag: "zzz"` and an
/// hour of freshness, and stored it: the body validated as "s1" was relabelled "zzz" and served
/// fresh for an hour. A 304 that does not describe the stored response updates nothing.
@Suite("HTTP cache: a 304 that does not describe the stored response")
struct HTTPCacheMismatchedNotModifiedTests {
    @Test(
        "The cache's revalidation answered by a 304 with another entity tag: the stored body once, the entry not refreshed",
        arguments: HTTPClient.TransportKind.testedKinds)
    func mismatchedTagUpdatesNothing(transport: HTTPClient.TransportKind) async throws {
        let configure: (inout HTTPClient.Configuration) -> Void = {
            $0.transport = transport
            $0.monitorsReachability = false
        }
        try await withCachingServer(configure: configure) { server, client, _ in
            let requests = Lock(0)
            server.route("/tagged") { request in
                requests.withLock { $0 += 1 }
                if request.headers["If-None-Match"] != nil {
                    return LocalHTTPServer.Response(status: 304, headers: ["ETag": "\"zzz\"", "Cache-Control": "max-age=3600"])
                }
                var response = LocalHTTPServer.Response.text("body of s1")
                response.headers["ETag"] = "\"s1\""
                response.headers["Cache-Control"] = "max-age=0"
                return response
            }
            func get() async throws -> HTTPRequestOperation {
                let operation = client.operation(with: try client.request(method: .get, path: "tagged"), success: nil, failure: nil)
                let probe = CompletionProbe()
                probe.attach(to: operation)
                client.enqueue(operation)
                let outcome = await probe.outcome()
                #expect(outcome.error == nil, "\(String(describing: outcome.error))")
                #expect(String(decoding: outcome.data ?? Data(), as: UTF8.self) == "body of s1")
                return operation
            }
            _ = try await get()
            // Revalidated: the server said "not modified", so the stored body is still the answer,
            // but under the stored response's own fields, not the 304's.
            let second = try await get()
            #expect(second.responseHead?.value(forHTTPHeaderField: "ETag") == "\"s1\"")
            // Not stored as fresh: the third request goes to the server again.
            let third = try await get()
            #expect(third.responseSource != .cache, "\(third.responseSource)")
            #expect(third.responseHead?.value(forHTTPHeaderField: "ETag") == "\"s1\"")
            #expect(requests.withLock { $0 } == 3)
        }
    }

    /// The second attack: a stored `W/"v1"` revalidated by a 304 carrying the strong `"v1"` was
    /// relabelled strong and kept fresh: a strong tag in a 304 selects by strong comparison
    /// (RFC 9111 §4.3.4), and a weak tag never matches strongly.
    @Test("A stored weak tag is not relabelled by a 304 carrying the strong one", arguments: HTTPClient.TransportKind.testedKinds)
    func weakStoredStrongNotModified(transport: HTTPClient.TransportKind) async throws {
        let configure: (inout HTTPClient.Configuration) -> Void = {
            $0.transport = transport
            $0.monitorsReachability = false
        }
        try await withCachingServer(configure: configure) { server, client, _ in
            let requests = Lock(0)
            server.route("/weak") { request in
                requests.withLock { $0 += 1 }
                if request.headers["If-None-Match"] != nil {
                    return LocalHTTPServer.Response(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=3600"])
                }
                var response = LocalHTTPServer.Response.text("weak body")
                response.headers["ETag"] = "W/\"v1\""
                response.headers["Cache-Control"] = "max-age=0"
                return response
            }
            for _ in 0..<3 {
                let response = try await client.response(method: .get, path: "weak")
                #expect(String(decoding: response.data, as: UTF8.self) == "weak body")
                #expect(response.head.value(forHTTPHeaderField: "ETag") == "W/\"v1\"")
            }
            #expect(requests.withLock { $0 } == 3)
        }
    }
}

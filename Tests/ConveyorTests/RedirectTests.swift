import Conveyor
import ConveyorTesting
import Foundation
import Testing

@Suite("Redirects are followed by Conveyor, not URLSession")
struct RedirectTests {
    @Test("A chain of 3 redirects ends at /get with redirectCount 3")
    func chain() async throws {
        try await withServer { _, client in
            let response = try await client.response(method: .get, path: "redirect/3")
            #expect(response.statusCode == 200)
            #expect(response.metrics.redirectCount == 3)
            #expect(response.request.url?.path == "/get")
        }
    }

    @Test("307 and 308 keep the method and the body", arguments: [307, 308])
    func keepsBody(status: Int) async throws {
        try await withServer { server, client in
            server.route("/old") { _ in .init(status: status, headers: ["Location": "/post"]) }
            let data = try await client.post("old", parameters: ["field": "value"])
            let echo = data.jsonObject
            #expect(echo["method"] as? String == "POST")
            #expect((echo["form"] as? [String: Any])?["field"] as? String == "value")
        }
    }

    @Test("303, and 302 after a POST, become a GET without the body", arguments: [302, 303])
    func becomesGet(status: Int) async throws {
        try await withServer { server, client in
            server.route("/submit") { _ in .init(status: status, headers: ["Location": "/anything"]) }
            let echo = try await client.post("submit", parameters: ["field": "value"]).jsonObject
            #expect(echo["method"] as? String == "GET")
            #expect(echo["data"] as? String == "")
            #expect((echo["headers"] as? [String: String])?["Content-Type"] == nil)
        }
    }

    @Test("Authorization is removed when a redirect leaves the origin (127.0.0.1 → localhost)")
    func crossOriginStripsCredentials() async throws {
        try await withServer { server, client in
            server.route("/away") { _ in .init(status: 302, headers: ["Location": "http://localhost:\(server.port)/headers"]) }
            client.setAuthorizationHeader(token: "redirect-test-token")
            client.setDefaultHeader("X-Keep", value: "yes")
            let headers = try await client.get("away").jsonObject["headers"] as? [String: String]
            #expect(headers?["Authorization"] == nil)
            #expect(headers?["X-Keep"] == "yes")
            #expect(server.receivedRequests.first { $0.path == "/away" }?.headers["Authorization"] == "Bearer redirect-test-token")
        }
    }

    @Test("A redirect loop fails with tooManyRedirects")
    func loop() async throws {
        try await withServer { server, client in
            server.route("/loop") { _ in .init(status: 302, headers: ["Location": "/loop"]) }
            await #expect {
                try await client.get("loop")
            } throws: { error in
                guard case .redirectFailed(.tooManyRedirects(let max, _)) = error as? ConveyorError else { return false }
                return max == RedirectPolicy.default.maximumRedirects
            }
            #expect(server.requestCount(path: "/loop") == RedirectPolicy.default.maximumRedirects + 1)
        }
    }

    @Test("A redirect to an unsupported scheme fails with invalidLocation")
    func unsupportedScheme() async throws {
        try await withServer { server, client in
            server.route("/ftp") { _ in .init(status: 302, headers: ["Location": "ftp://example.com/file"]) }
            await #expect {
                try await client.get("ftp")
            } throws: { error in
                guard case .redirectFailed(.invalidLocation(let location, _)) = error as? ConveyorError else { return false }
                return location == "ftp://example.com/file"
            }
        }
    }

    @Test("With RedirectPolicy.none the 3xx is the response, and fails validation")
    func notFollowed() async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.redirectPolicy = .none
        try await withServer(configuration: configuration) { _, client in
            await #expect {
                try await client.get("redirect/1")
            } throws: { error in
                (error as? ConveyorError)?.statusCode == 302
            }
        }
    }

    @Test(
        "A redirect to an IPv4-mapped IPv6 literal is followed the same on both transports", arguments: HTTPClient.TransportKind.testedKinds
    )
    func ipv4MappedRedirect(transport: HTTPClient.TransportKind) async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        try await withServer(configuration: configuration) { server, client in
            for literal in ["::ffff:127.0.0.1", "::FFFF:7f00:1"] {
                let target = "http://[\(literal)]:\(server.port)/get"
                let response = try await client.response(method: .get, path: "redirect-to", parameters: ["url": target])
                #expect(response.statusCode == 200 && response.response.url?.host == "127.0.0.1", "\(literal)")
            }
            #expect(server.requestCount(path: "/get") == 2)
        }
    }

    @Test(
        "A custom credential header follows a cross-origin redirect unless the policy names it",
        arguments: HTTPClient.TransportKind.testedKinds)
    func customCredentialHeaderAcrossOrigins(transport: HTTPClient.TransportKind) async throws {
        let other = try LocalHTTPServer.started()
        defer { other.stop() }
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        try await withServer(configuration: configuration) { server, client in
            // Not one of the built-in credential names (X-API-Key is: see CredentialHeaderNamesTests).
            client.setDefaultHeader("X-Tenant-Secret", value: "k-123")
            client.setAuthorizationHeader(token: "t-456")
            let target = other.baseURL.appendingPathComponent("headers").absoluteString
            _ = try await client.get("redirect-to", parameters: ["url": target])
            let first = try #require(other.receivedRequests.last?.headers)
            #expect(first["X-Tenant-Secret"] == "k-123" && first["Authorization"] == nil)

            var policy = RedirectPolicy.default
            policy.headersRemovedAcrossOrigins.insert("x-tenant-secret")
            let request = try client.request(method: .get, path: "redirect-to", parameters: ["url": target])
            let operation = client.operation(with: request, success: nil, failure: nil)
            operation.redirectPolicy = policy
            let probe = CompletionProbe()
            probe.attach(to: operation)
            client.enqueue(operation)
            #expect(await probe.outcome().error == nil)
            let second = try #require(other.receivedRequests.last?.headers)
            #expect(second["X-Tenant-Secret"] == nil && second["Authorization"] == nil)
            // On the same origin it stays.
            _ = try await client.get("redirect-to", parameters: ["url": "/headers"])
            #expect(server.receivedRequests.last?.headers["X-Tenant-Secret"] == "k-123")
        }
    }
}

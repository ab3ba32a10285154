import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// Findings of the independent attack on proxies, address overrides and request adapters
/// (round 4), each a test that failed before its fix.
@Suite("Reach and adapters: what the independent attack broke", .timeLimit(.notAHang))
struct ReachAttackTests {
    @Test(
        "An adapter that returns a request without an http(s) URL fails typed, on both transports (URLSession trapped)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func adapterWithoutURL(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        for bad: URL? in [nil, URL(string: "file:///etc/passwd")!, URL(string: "ftp://127.0.0.1/x")!] {
            let client = testClient(server, transport) {
                $0.requestAdapters = [
                    ClosureRequestAdapter { request, _ in
                        var request = request
                        request.url = bad
                        return request
                    }
                ]
            }
            await #expect {
                _ = try await client.response(method: .get, path: "get")
            } throws: { error in
                guard case .invalidURL = error as? ConveyorError else { return false }
                return true
            }
        }
        #expect(server.receivedRequests.isEmpty)
    }

    @Test(
        "An adapter that moves a request to another origin does not take the client's Authorization along",
        arguments: HTTPClient.TransportKind.testedKinds)
    func adapterMovesOrigin(transport: HTTPClient.TransportKind) async throws {
        let own = try LocalHTTPServer.started()
        defer { own.stop() }
        let other = try LocalHTTPServer.started()
        defer { other.stop() }
        other.route("/mirror") { _ in .text("mirror") }
        let mirror = other.baseURL.appendingPathComponent("mirror")
        let client = testClient(own, transport) {
            $0.requestAdapters = [
                ClosureRequestAdapter { request, _ in
                    var request = request
                    request.url = mirror
                    // What the adapter sets itself for the new origin is its own decision.
                    request.setValue("mirror-key", forHTTPHeaderField: "X-Api-Key")
                    return request
                }
            ]
        }
        client.setAuthorizationHeader(token: "origin-only-token")
        _ = try await client.response(method: .get, path: "anything")
        let received = try #require(other.receivedRequests.last)
        #expect(received.headers["Authorization"] == nil)
        #expect(received.headers["X-Api-Key"] == "mirror-key")
        #expect(own.receivedRequests.isEmpty)
    }

    @Test("An override's host that libcurl reads as syntax (*, a leading - or +) is refused, never applied")
    func overrideHostSyntax() throws {
        for host in ["*", "-api.test", "+api.test", "api.*.test"] {
            var configuration = HTTPClient.Configuration.default
            configuration.transport = .curl
            configuration.resolve = [.init(host: host, port: 8080, addresses: ["127.0.0.1"])]
            #expect(throws: ConveyorError.self, "\(host)") { try configuration.validate() }
        }
    }

    @Test("Bypass entries that libcurl would ignore are refused: a port, a prefix too long, an IPv6 range")
    func bypassEntriesRefused() throws {
        for entry in ["localhost:8080", "10.0.0.0/33", "::1/64", "10.0.0.0/x", "1.2.3.4/8/8"] {
            var configuration = HTTPClient.Configuration.default
            configuration.transport = .curl
            var proxy = HTTPClient.Proxy.http(host: "proxy.example", port: 3128)
            proxy.bypassedHosts = [entry]
            configuration.proxy = proxy
            #expect(throws: ConveyorError.self, "\(entry)") { try configuration.validate() }
        }
    }

    @Test("A * among other bypass entries bypasses every host, and ::1/128 is ::1 (curl, through a proxy that refuses)")
    func bypassStarAndFullRanges() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let refused = try RefusedPort()
        for entries in [["foo.example", "*"], ["127.0.0.1/32"]] {
            let client = testClient(server, .curl) {
                var proxy = HTTPClient.Proxy.http(host: "127.0.0.1", port: refused.port)
                proxy.bypassedHosts = entries
                $0.proxy = proxy
            }
            // Through the proxy the request would fail (nothing listens there): it succeeds.
            #expect(try await client.response(method: .get, path: "get").statusCode == 200, "\(entries)")
        }
    }
}

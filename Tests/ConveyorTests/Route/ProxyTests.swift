import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// `Configuration.proxy` against real proxies: pproxy as an HTTP (forwarding and `CONNECT`) and
/// SOCKS5 proxy, with and without credentials; a recording socket as a proxy that shows what a
/// `CONNECT` carries.
@Suite("Proxies per client: Configuration.proxy")
struct ProxyTests {
    static let user = "conveyor"
    static let password = "proxy-secret-4711"

    /// A curl client of `baseURL` through `proxy`, with loopback not bypassed (every test server is on it).
    private func client(
        _ baseURL: URL, _ proxy: HTTPClient.Proxy, transport: HTTPClient.TransportKind = .curl,
        configure: (inout HTTPClient.Configuration) -> Void = { _ in }
    ) -> HTTPClient {
        var proxy = proxy
        proxy.bypassedHosts = []
        return testClient(baseURL: baseURL, transport) {
            $0.proxy = proxy
            configure(&$0)
        }
    }

    private func proxyFailure(_ call: () async throws -> Void) async -> ConveyorError.RouteFailureReason? {
        do {
            try await call()
            return nil
        } catch {
            guard case .routeFailed(let reason) = error as? ConveyorError else { return nil }
            return reason
        }
    }

    @Test("A proxy is used unless the bypass list names the host; loopback is bypassed by default (curl)")
    func routingAndBypass() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let refused = try RefusedPort()
        // Through a proxy that refuses connections: the request fails, so the proxy was used.
        let proxied = client(server.baseURL, .http(host: "127.0.0.1", port: refused.port))
        await #expect {
            try await proxied.get("get")
        } throws: { error in
            (error as? ConveyorError)?.connectivityFailure == .notConnected
        }
        // The default list sends 127.0.0.1 directly.
        let bypassing = testClient(server, .curl) { $0.proxy = .http(host: "127.0.0.1", port: refused.port) }
        #expect(try await bypassing.response(method: .get, path: "get").statusCode == 200)
        #expect(HTTPClient.Proxy.http(host: "proxy").bypassedHosts == ["localhost", "127.0.0.0/8", "::1", "::ffff:127.0.0.1"])
        // .none ignores the environment and connects directly.
        #expect(try await testClient(server, .curl) { $0.proxy = .none }.response(method: .get, path: "get").statusCode == 200)
        #expect(server.requestCount(path: "/get") == 2)
    }

    @Test("An HTTP proxy forwards plain requests and tunnels https with CONNECT; TLS checks the origin (curl)")
    func httpProxy() async throws {
        let proxy = try await ProxyTestServer.shared()
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let plain = client(server.baseURL, .http(host: "127.0.0.1", port: proxy.port))
        let echo = try await plain.post("post", parameters: ["field": "value"]).jsonObject
        #expect((echo["form"] as? [String: Any])?["field"] as? String == "value")
        let tls = try await TLSTestServer.shared()
        let tunnelled = client(tls.baseURL, .http(host: "127.0.0.1", port: proxy.port)) {
            $0.tls.certificateAuthorities = [.pemFile(tls.certificateAuthority)]
        }
        let response = try await tunnelled.response(method: .get, path: "anything")
        #expect(String(decoding: response.data, as: UTF8.self) == "secure")
        // The origin's certificate is still checked through the tunnel.
        let untrusted = client(tls.baseURL, .http(host: "127.0.0.1", port: proxy.port))
        await #expect {
            try await untrusted.get("anything")
        } throws: { error in
            guard case .serverTrustFailed = error as? ConveyorError else { return false }
            return true
        }
    }

    @Test("Proxy credentials: none is a typed 407 error, wrong ones too, right ones pass and stay with the proxy (curl)")
    func proxyCredentials() async throws {
        let proxy = try await ProxyTestServer.shared(credentials: (Self.user, Self.password))
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let tls = try await TLSTestServer.shared()
        func clients(_ credentials: HTTPClient.Proxy.Credentials?) -> [HTTPClient] {
            let proxy = HTTPClient.Proxy.http(host: "127.0.0.1", port: proxy.port, credentials: credentials)
            return [
                client(server.baseURL, proxy),
                client(tls.baseURL, proxy) { $0.tls.certificateAuthorities = [.pemFile(tls.certificateAuthority)] },
            ]
        }
        // A forwarded request and a CONNECT alike.
        for client in clients(nil) {
            #expect(
                await proxyFailure { _ = try await client.get("get") }
                    == .proxyAuthenticationFailed(proxy: "http://127.0.0.1:\(proxy.port)", credentialsSent: false))
        }
        for client in clients(.init(user: Self.user, password: "wrong")) {
            #expect(
                await proxyFailure { _ = try await client.get("get") }
                    == .proxyAuthenticationFailed(proxy: "http://127.0.0.1:\(proxy.port)", credentialsSent: true))
        }
        let right = clients(.init(user: Self.user, password: Self.password))
        right.forEach { $0.setDefaultHeader("Authorization", value: "Bearer origin-token") }
        let forwarded = try await right[0].response(method: .get, path: "headers")
        let headers = try #require(forwarded.data.jsonObject["headers"] as? [String: String])
        #expect(headers["Authorization"] == "Bearer origin-token")
        #expect(headers["Proxy-Authorization"] == nil)
        let tunnelled = try await right[1].response(method: .get, path: "anything")
        #expect(tunnelled.statusCode == 200)
        #expect(tunnelled.response.value(forHTTPHeaderField: "X-Saw-Authorization") == "yes")
        #expect(tunnelled.response.value(forHTTPHeaderField: "X-Saw-Proxy-Authorization") == "no")
    }

    @Test("An HTTPS proxy: TLS to the proxy, checked with the client's authorities; plain and tunnelled requests (curl)")
    func httpsProxy() async throws {
        let tls = try await TLSTestServer.shared()
        let proxy = try await ProxyTestServer.shared(credentials: (Self.user, Self.password), tls: tls)
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let https = HTTPClient.Proxy.https(
            host: "127.0.0.1", port: proxy.port, credentials: .init(user: Self.user, password: Self.password))
        let trusting: (inout HTTPClient.Configuration) -> Void = { $0.tls.certificateAuthorities = [.pemFile(tls.certificateAuthority)] }
        let plain = client(server.baseURL, https, configure: trusting)
        #expect(try await plain.response(method: .get, path: "get").statusCode == 200)
        let tunnelled = client(tls.baseURL, https, configure: trusting)
        #expect(String(decoding: try await tunnelled.response(method: .get, path: "anything").data, as: UTF8.self) == "secure")
        // Without the authority, the proxy's certificate is refused: nothing goes through it.
        await #expect {
            try await client(server.baseURL, https).get("get")
        } throws: { error in
            guard case .serverTrustFailed = error as? ConveyorError else { return false }
            return true
        }
        #expect(server.requestCount(path: "/get") == 1)
    }

    @Test("A CONNECT carries none of the request's own credentials (curl)")
    func connectCarriesNoOriginCredentials() async throws {
        let recorder = try RecordingSocketServer()
        defer { recorder.stop() }
        let client = client(try #require(URL(string: "https://origin.conveyor.test/")), .http(host: "127.0.0.1", port: recorder.port))
        client.setDefaultHeader("Authorization", value: "Bearer origin-token")
        _ = try? await client.get("private", headers: ["Cookie": "session=origin-cookie"])
        let exchange = try #require(await recorder.exchanges(1).first)
        #expect(exchange.head.hasPrefix("CONNECT origin.conveyor.test:443 "))
        #expect(exchange.values(of: "Authorization").isEmpty && exchange.values(of: "Cookie").isEmpty)
        #expect(!exchange.head.contains("origin-token") && !exchange.head.contains("origin-cookie"))
    }

    @Test("SOCKS5: the proxy resolves the name; credentials are sent, and a refusal is a typed error (curl)")
    func socks5() async throws {
        let open = try await ProxyTestServer.shared()
        let guarded = try await ProxyTestServer.shared(credentials: (Self.user, Self.password))
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        // `localhost` is resolved by the proxy (socks5h), the client asks no DNS.
        let baseURL = try #require(URL(string: "http://localhost:\(server.port)/"))
        #expect(
            try await client(baseURL, .socks5(host: "127.0.0.1", port: open.port)).response(method: .get, path: "get").statusCode == 200)
        let right = client(
            baseURL, .socks5(host: "127.0.0.1", port: guarded.port, credentials: .init(user: Self.user, password: Self.password)))
        #expect(try await right.response(method: .get, path: "get").statusCode == 200)
        let wrong = client(baseURL, .socks5(host: "127.0.0.1", port: guarded.port, credentials: .init(user: Self.user, password: "wrong")))
        let reason = await proxyFailure { _ = try await wrong.get("get") }
        guard case .proxyHandshakeFailed(let name, _) = reason else {
            Issue.record("expected proxyHandshakeFailed, got \(String(describing: reason))")
            return
        }
        #expect(name == "socks5h://127.0.0.1:\(guarded.port)")
        #expect(server.requestCount(path: "/get") == 2)
    }

    @Test("Proxy credentials never appear in descriptions or errors, and are masked in emitted text")
    func credentialsMasked() async throws {
        let proxy = HTTPClient.Proxy.http(host: "proxy.example", credentials: .init(user: Self.user, password: Self.password))
        #expect(!proxy.description.contains(Self.password) && !String(reflecting: proxy.credentials).contains(Self.password))
        #expect {
            _ = try HTTPClient.Proxy(url: "ftp://\(Self.user):\(Self.password)@proxy.example")
        } throws: { error in
            guard case .routeFailed(.invalidProxy(let shown, _)) = error as? ConveyorError else { return false }
            return !shown.contains(Self.password) && !"\(error)".contains(Self.password)
        }
        // While a client with the proxy lives, the password is masked wherever Conveyor prints.
        let client = testClient(baseURL: try #require(URL(string: "http://127.0.0.1:9/")), .curl) { $0.proxy = proxy }
        let printed = "\(ConveyorError.invalidURL(path: "/leak?p=\(Self.password)", baseURL: nil))"
        #expect(!printed.contains(Self.password))
        withExtendedLifetime(client) {}
    }

    @Test("Proxy URLs: http, https, socks5 and socks5h parse; other schemes, no host and bad ports are typed errors")
    func proxyURLs() throws {
        #expect(try HTTPClient.Proxy(url: "http://proxy:8080").server?.description == "http://proxy:8080")
        #expect(try HTTPClient.Proxy(url: "https://proxy").server?.port == 443)
        #expect(try HTTPClient.Proxy(url: "socks5://proxy").server?.description == "socks5h://proxy:1080")
        let withCredentials = try HTTPClient.Proxy(url: "socks5h://me:p%40ss@proxy:9050")
        #expect(withCredentials.credentials == .init(user: "me", password: "p@ss"))
        for bad in ["ftp://proxy", "socks4://proxy", "http://", "http://proxy:0", "proxy:3128"] {
            #expect(throws: ConveyorError.self) { _ = try HTTPClient.Proxy(url: bad) }
        }
        var configuration = HTTPClient.Configuration()
        configuration.transport = .curl
        configuration.proxy = .http(host: "proxy", port: 70_000)
        #expect(throws: ConveyorError.self) { try configuration.validate() }
        configuration.proxy = .http(host: "proxy")
        configuration.proxy.bypassedHosts = ["a.example,b.example"]
        #expect(throws: ConveyorError.self) { try configuration.validate() }
    }

    @Test("URLSession refuses a proxy of the client's own with a typed error, before anything is sent")
    func urlSessionRefuses() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        for proxy in [HTTPClient.Proxy.http(host: "127.0.0.1"), .https(host: "127.0.0.1"), .socks5(host: "127.0.0.1")] {
            let client = testClient(server, .urlSession) { $0.proxy = proxy }
            #expect(
                await proxyFailure { _ = try await client.get("get") }
                    == .unsupportedByTransport(feature: "a proxy of its own (\(proxy.server!.kind.rawValue))", transport: .urlSession))
            var configuration = HTTPClient.Configuration()
            configuration.transport = .urlSession
            configuration.proxy = proxy
            #expect(throws: ConveyorError.self) { try configuration.validate() }
        }
        #expect(server.receivedRequests.isEmpty)
        // The environment's proxies (the default) are what URLSession uses, as before.
        #expect(try await testClient(server, .urlSession).response(method: .get, path: "get").statusCode == 200)
    }
}

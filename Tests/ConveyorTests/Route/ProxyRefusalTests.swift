import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// How a client's own proxy refusing it ends (curl; URLSession takes no proxy of a client's own):
/// a typed route failure, whatever the proxy's answer carries.
@Suite("Proxy refusals: typed, and bounded")
struct ProxyRefusalTests {
    /// A proxy that answers every request, `CONNECT` included, with `407` and a 64 MiB body.
    private static func refusingProxy() throws -> FloodingSocketServer {
        try FloodingSocketServer { _ in
            .init(head: "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"proxy\"", bodyLength: 64 << 20)
        }
    }

    private static func isProxyRefusal(_ error: any Error, credentialsSent: Bool) -> Bool {
        guard case .routeFailed(.proxyAuthenticationFailed(_, let sent)) = error as? ConveyorError else { return false }
        return sent == credentialsSent
    }

    @Test(
        "A CONNECT answered 407 with a large body is proxyAuthenticationFailed at once, not an idle timeout (curl)",
        arguments: [false, true])
    func connectRefusalWithLargeBody(credentials: Bool) async throws {
        let proxy = try Self.refusingProxy()
        defer { proxy.stop() }
        // libcurl reads a CONNECT response's body a byte at a time: 64 MiB would take minutes.
        // The idle timeout (20 s) is what ended the request before the fix.
        let client = testClient(baseURL: URL(string: "https://origin.invalid/")!, .curl) {
            $0.proxy = .http(
                host: "127.0.0.1", port: proxy.port,
                credentials: credentials ? .init(user: "refusal-user-4711", password: "refusal-secret-4711") : nil)
            $0.idleTimeout = 20
        }
        await #expect {
            _ = try await client.get("secret")
        } throws: { error in
            // Not sent: the 407 ends the request at its head, before libcurl answers it (the
            // attack on issue 58 saw `credentialsSent: true` here though none went out).
            Self.isProxyRefusal(error, credentialsSent: false)
        }
        let connections = proxy.requestHeads
        #expect(connections.allSatisfy { $0.hasPrefix("CONNECT origin.invalid:443 ") }, "\(connections)")
    }

    /// The second attack: with credentials configured but a 407 that could not be answered, the
    /// error read "none are configured".
    @Test("A refusal with no credentials sent says why without claiming none are configured")
    func refusalText() {
        let text = ConveyorError.routeFailed(reason: .proxyAuthenticationFailed(proxy: "http://p:1", credentialsSent: false)).description
        #expect(text.contains("none were sent") && text.contains("could not be answered"), "\(text)")
    }

    /// The second attack: through the environment's proxy, whose URL's credentials libcurl sends
    /// up front, a refused `CONNECT` said `credentialsSent: false` (and "none are configured")
    /// though the proxy had received `Proxy-Authorization`. In a child process: `https_proxy`
    /// would reach every client of this one.
    @Test("Through the environment's proxy with credentials in its URL, a refusal says they were sent (curl, child process)")
    func environmentProxyCredentials() async throws {
        #if os(Linux)
            let proxy = try FloodingSocketServer { _ in
                .init(head: "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"proxy\"", bodyLength: 0)
            }
            defer { proxy.stop() }
            var environment = ProcessInfo.processInfo.environment
            environment["https_proxy"] = "http://env-user-4711:env-secret-4711@127.0.0.1:\(proxy.port)"
            environment["no_proxy"] = ""
            environment["CONVEYOR_TRANSPORT"] = nil
            let output = try await HelperProcess.output(["proxy-get", "https://conveyor-proxy-test.invalid/"], environment: environment)
            #expect(proxy.requestHeads.contains { $0.lowercased().contains("proxy-authorization: basic") }, "\(proxy.requestHeads)")
            #expect(output.contains("refused the configured credentials"), "\(output)")
        #endif
    }
}

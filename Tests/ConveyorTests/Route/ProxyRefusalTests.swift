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
}

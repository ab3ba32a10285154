import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// The bypass list compares addresses, not spellings: every spelling of a loopback address —
/// IPv4 mapped into IPv6 in dotted or hex form, any address of 127/8 — is reached directly
/// under ``HTTPClient/Proxy/defaultBypassedHosts``.
@Suite("Proxy bypass: addresses, not strings")
struct ProxyBypassTests {
    @Test("The bypass decision: every spelling of 127/8 and ::1, mapped or not, and only those")
    func decision() {
        let proxy = HTTPClient.Proxy.http(host: "proxy.example")
        for host in [
            "127.0.0.1", "127.1.2.3", "[::1]", "::1", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::ffff:127.0.0.2]",
            "[::FFFF:7F12:3456]", "[0:0:0:0:0:ffff:7f00:1]",
        ] {
            #expect(proxy.bypasses(host: host), "\(host) is loopback")
        }
        for host in ["10.0.0.1", "[::2]", "[::ffff:10.0.0.1]", "[::ffff:800:1]", "[2001:db8::1]", "128.0.0.1", "example.com"] {
            #expect(!proxy.bypasses(host: host), "\(host) is not loopback")
        }
        var custom = proxy
        custom.bypassedHosts = ["10.0.0.0/8", "[2001:db8::1]"]
        #expect(
            custom.bypasses(host: "[::ffff:a00:5]") && custom.bypasses(host: "[2001:0db8:0:0::1]") && !custom.bypasses(host: "127.0.0.1"))
        custom.bypassedHosts = []
        #expect(!custom.bypasses(host: "[::ffff:7f00:1]"))
        custom.bypassedHosts = ["*"]
        #expect(custom.bypasses(host: "[2001:db8::2]"))
    }

    @Test("Other spellings of IPv4-mapped loopback go direct under the default list, over sockets (curl)")
    func mappedLoopbackGoesDirect() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        // A proxy that would answer anything: any request it sees was sent to it.
        let proxy = try FloodingSocketServer { _ in .init(head: "HTTP/1.1 502 Bad Gateway", bodyLength: 0) }
        defer { proxy.stop() }
        for host in ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]"] {
            let client = testClient(baseURL: URL(string: "http://\(host):\(server.port)/")!, .curl) {
                $0.proxy = .http(host: "127.0.0.1", port: proxy.port)
            }
            #expect(try await client.response(method: .get, path: "get").statusCode == 200, "\(host)")
        }
        // Nothing listens on 127.0.0.2 at that port: direct, the connection is refused; the
        // proxy would have answered 502.
        let other = testClient(baseURL: URL(string: "http://[::ffff:127.0.0.2]:\(server.port)/")!, .curl) {
            $0.proxy = .http(host: "127.0.0.1", port: proxy.port)
        }
        await #expect(throws: ConveyorError.self) { try await other.get("get") }
        #expect(proxy.requestHeads.isEmpty, "\(proxy.requestHeads)")
        #expect(server.requestCount(path: "/get") == 2)
    }
}

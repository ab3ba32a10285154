import Conveyor
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// Findings of the independent attack on the proxy bypass (issue 58): numeric spellings of
/// 127.0.0.1 that libcurl reads as the address (`127.1`, `2130706433`, `0x7f000001`,
/// `0177.0.0.1`) went direct while `TransferMetrics.proxy` and the logger said "via" the proxy;
/// `127.0.0.1.` and a zoned `[::1%25lo]` were not recognised as loopback at all.
@Suite("Proxy bypass: the attack's spellings of loopback")
struct ProxyBypassAttackTests {
    static let spellings = ["127.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1", "127.0.0.1.", "[::1%25lo]", "::1%lo"]

    @Test("Every numeric spelling of 127/8 is bypassed; names made of hex letters are not addresses")
    func decision() {
        let proxy = HTTPClient.Proxy.http(host: "proxy.example")
        for host in Self.spellings {
            #expect(proxy.bypasses(host: host), "\(host) is loopback")
        }
        for host in ["cafe", "beef.cafe", "0x8000001", "10.1", "127.0.0.1.evil", "2130706433.example"] {
            #expect(!proxy.bypasses(host: host), "\(host) is not loopback")
        }
    }

    @Test("A request to 127.1 goes direct, and the metrics say it was bypassed (curl)")
    func metricsAgreeWithTheWire() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/route") { _ in .text("direct") }
        // A proxy that answers everything itself: a body "pp" means the request went through it.
        let proxy = try FloodingSocketServer { _ in .init(head: "HTTP/1.1 200 OK", bodyLength: 2) }
        defer { proxy.stop() }
        for host in ["127.1", "2130706433", "0x7f000001"] {
            let client = testClient(baseURL: URL(string: "http://\(host):\(server.port)/")!, .curl) {
                $0.proxy = .http(host: "127.0.0.1", port: proxy.port)
            }
            let response = try await client.response(method: .get, path: "route")
            #expect(String(decoding: response.data, as: UTF8.self) == "direct", "\(host)")
            #expect(response.metrics.transfer?.proxy == .bypassed(proxy: "http://127.0.0.1:\(proxy.port)"), "\(host)")
        }
        #expect(proxy.requestHeads.isEmpty)
    }
}

import Foundation
import Testing

@testable import Conveyor

/// URLSession's task metrics (delivered on Apple platforms) become ``TransferMetrics`` as the curl
/// transport reports them: offsets from the fetch start, in order, 0 for skipped phases.
@Suite("URLSession task metrics as TransferMetrics")
struct URLSessionMetricsTests {
    // At the reference date, so that offsets come out exact.
    static let start = Date(timeIntervalSinceReferenceDate: 0)

    static func timeline(
        _ offsets: (lookup: Double?, connect: Double?, tlsStart: Double?, tls: Double?, first: Double?, last: Double?),
        protocolName: String? = "h2", reused: Bool = false
    ) -> URLSessionTransactionTimeline {
        let date = { (offset: Double?) in offset.map { start.addingTimeInterval($0) } }
        return URLSessionTransactionTimeline(
            fetchStart: start, domainLookupEnd: date(offsets.lookup), connectEnd: date(offsets.connect),
            secureConnectionStart: date(offsets.tlsStart), secureConnectionEnd: date(offsets.tls), responseStart: date(offsets.first),
            responseEnd: date(offsets.last), networkProtocolName: protocolName, isReusedConnection: reused, remoteAddress: "192.0.2.7")
    }

    @Test("A new HTTPS connection: every phase, as offsets from the fetch start")
    func newSecureConnection() throws {
        let metrics = try #require(Self.timeline((0.01, 0.03, 0.03, 0.08, 0.12, 0.5)).transferMetrics)
        #expect(
            metrics
                == TransferMetrics(
                    domainLookup: 0.01, connect: 0.03, secureConnection: 0.08, firstByte: 0.12, lastByte: 0.5, httpVersion: "HTTP/2",
                    reusedConnection: false, remoteAddress: "192.0.2.7"))
    }

    @Test("Plain HTTP has no TLS phase; a reused connection shows 0 for lookup, connect and TLS")
    func plainAndReused() throws {
        let plain = try #require(Self.timeline((0.01, 0.02, nil, nil, 0.05, 0.06), protocolName: "http/1.1").transferMetrics)
        #expect(plain.secureConnection == nil && plain.httpVersion == "HTTP/1.1" && plain.connect == 0.02)
        let reused = try #require(Self.timeline((nil, nil, 0.0, nil, 0.02, 0.03), reused: true).transferMetrics)
        #expect(reused.domainLookup == 0 && reused.connect == 0 && reused.secureConnection == 0 && reused.reusedConnection)
        #expect(reused.firstByte == 0.02 && reused.lastByte == 0.03)
    }

    @Test("Missing or out-of-order dates never make a phase end before the one before it")
    func monotonic() throws {
        let metrics = try #require(Self.timeline((0.05, 0.02, 0.02, nil, 0.01, 0.04)).transferMetrics)
        #expect(metrics.domainLookup == 0.05 && metrics.connect == 0.05 && metrics.secureConnection == 0.05)
        #expect(metrics.firstByte == 0.05 && metrics.lastByte == 0.05)
        // A transaction without a response end did not finish: no metrics.
        #expect(Self.timeline((0.01, 0.02, nil, nil, 0.03, nil)).transferMetrics == nil)
    }

    @Test("ALPN's protocol names become the versions the curl transport reports")
    func versions() {
        let names: [(String?, String)] = [
            ("h2", "HTTP/2"), ("h3", "HTTP/3"), ("http/1.1", "HTTP/1.1"), ("http/1.0", "HTTP/1.0"), (nil, "HTTP/1.1"),
        ]
        for (name, version) in names { #expect(URLSessionTransactionTimeline.httpVersion(name) == version) }
    }
}

@testable import Conveyor
import ConveyorTesting
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Choosing a transport, and the curl transport's parts that a socket cannot show alone.
@Suite("Transports: selection, cookies, the curl transport's parsing and errors")
struct TransportTests {
    @Test(".automatic picks curl on Linux, URLSession for custom URLProtocols; CONVEYOR_TRANSPORT overrides")
    func selection() {
        let plain = URLSessionConfiguration.default
        #if os(Linux)
        #expect(TransportFactory.resolve(.automatic, sessionConfiguration: plain, environment: [:]) == .curl)
        #else
        #expect(TransportFactory.resolve(.automatic, sessionConfiguration: plain, environment: [:]) == .urlSession)
        #endif
        let stubbed = URLSessionConfiguration.ephemeral
        stubbed.protocolClasses = [StubURLProtocol.self] + (stubbed.protocolClasses ?? [])
        #expect(TransportFactory.resolve(.automatic, sessionConfiguration: stubbed, environment: [:]) == .urlSession)
        #expect(TransportFactory.resolve(.automatic, sessionConfiguration: plain, environment: ["CONVEYOR_TRANSPORT": "urlsession"]) == .urlSession)
        #expect(TransportFactory.resolve(.automatic, sessionConfiguration: plain, environment: ["CONVEYOR_TRANSPORT": "curl"]) == .curl)
        #expect(TransportFactory.resolve(.urlSession, sessionConfiguration: plain, environment: ["CONVEYOR_TRANSPORT": "curl"]) == .urlSession)
    }

    #if os(Linux)
    @Test("A libcurl that cannot be loaded is reported with the loader's reason")
    func missingLibrary() {
        guard case let .failure(error) = CurlLibrary.load(names: ["libconveyor-missing-curl.so.4"]) else {
            Issue.record("a missing library loaded")
            return
        }
        #expect(error.description.contains("libconveyor-missing-curl.so.4"))
        #expect((try? CurlLibrary.shared.get()) != nil)
    }

    @Test("Response heads: interim 100 skipped, folded lines joined, repeats merged, Latin-1 kept")
    func responseHead() throws {
        var head = CurlResponseHead()
        let lines = ["HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/1.1 201 Created\r\n", "X-Folded: one\r\n", "  two\r\n",
                     "Vary: Accept\r\n", "vary: Cookie\r\n", "X-Name: caf\u{E9}\r\n"]
        for line in lines {
            #expect(Array(line.utf8).withUnsafeBytes { head.consume($0) } == false)
        }
        let latin1: [UInt8] = Array("X-Latin: caf".utf8) + [0xE9] + Array("\r\n".utf8)
        #expect(latin1.withUnsafeBytes { head.consume($0) } == false)
        #expect(Array("\r\n".utf8).withUnsafeBytes { head.consume($0) } == true)
        let response = try #require(head.response(for: URL(string: "http://example.com/")!))
        #expect(response.statusCode == 201)
        #expect(response.value(forHTTPHeaderField: "X-Folded") == "one two")
        #expect(response.value(forHTTPHeaderField: "Vary") == "Accept, Cookie")
        #expect(response.value(forHTTPHeaderField: "X-Name") == "caf\u{E9}")
        #expect(response.value(forHTTPHeaderField: "X-Latin") == "caf\u{E9}")
    }

    @Test("libcurl result codes become the URLError codes URLSession uses; a pin mismatch is serverTrustFailed")
    func errors() {
        let url = URL(string: "https://api.example.com/x")!
        func code(_ curl: Int32, _ text: String = "") -> URLError.Code? { (CurlErrors.error(for: curl, text: text, url: url) as? URLError)?.code }
        #expect(code(6) == .cannotFindHost)
        #expect(code(7) == .cannotConnectToHost)
        #expect(code(28) == .timedOut)
        #expect(code(52) == .networkConnectionLost)
        #expect(code(56, "Illegal or missing hexadecimal sequence in chunked-encoding") == .badServerResponse)
        #expect(code(60) == .serverCertificateUntrusted)
        #expect(code(61) == .cannotDecodeContentData)
        guard case let .serverTrustFailed(host, reason) = CurlErrors.error(for: 90, text: "SSL: public key does not match pinned public key", url: url) as? ConveyorError else {
            Issue.record("a pin mismatch was not serverTrustFailed")
            return
        }
        #expect(host == "api.example.com")
        #expect(reason.contains("pinned"))
    }
    #endif

    @Test("Set-Cookie values: joined lists split outside Expires dates; Max-Age before Expires; Netscape dates")
    func cookieParsing() {
        let joined = "a=1; Path=/, b=2; Expires=Thu, 01-Jan-1970 00:00:00 GMT; Path=/, c=3"
        #expect(TransportCookies.split(joined) == ["a=1; Path=/", "b=2; Expires=Thu, 01-Jan-1970 00:00:00 GMT; Path=/", "c=3"])
        let now = Date()
        #expect(TransportCookies.expiry(of: "a=1; Max-Age=0", now: now) == .distantPast)
        #expect(TransportCookies.expiry(of: "a=1; Max-Age=60; Expires=Thu, 01 Jan 1970 00:00:00 GMT", now: now) == now.addingTimeInterval(60))
        #expect(TransportCookies.expiry(of: "a=1; Path=/", now: now) == nil)
        #expect(TransportCookies.cookieDate("Thu, 01-Jan-70 00:00:10 GMT") == Date(timeIntervalSince1970: 10))
        #expect(TransportCookies.cookieDate("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("Metrics of a plain-HTTP exchange: phases in order, no TLS, the second request reuses the connection")
    func metrics() async throws {
        #if os(Linux)
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        var configuration = HTTPClient.Configuration.default
        configuration.transport = .curl
        configuration.cache = nil
        configuration.monitorsReachability = false
        let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
        _ = try await client.response(method: .get, path: "get")
        let second = try await client.response(method: .get, path: "get")
        let metrics = try #require(second.metrics.transfer)
        #expect(metrics.httpVersion == "HTTP/1.1")
        #expect(metrics.secureConnection == nil)
        #expect(metrics.reusedConnection)
        #expect(metrics.remoteAddress == "127.0.0.1")
        #expect(metrics.domainLookup <= metrics.connect && metrics.connect <= metrics.firstByte && metrics.firstByte <= metrics.total)
        #expect(metrics.total > 0)
        #endif
    }
}

import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// `Configuration.resolve` (`curl --resolve`): names no DNS knows reach a local server, TLS
/// still verifies the URL's host, and bad entries are typed errors.
@Suite("Address overrides: Configuration.resolve")
struct AddressOverrideTests {
    /// A name that resolves nowhere (RFC 6761 reserves `.test`), the TLS test server's
    /// certificate includes it.
    static let name = "api.conveyor.test"

    @Test("A name no DNS knows reaches 127.0.0.1, with its own Host field (curl)")
    func plainHTTP() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let baseURL = try #require(URL(string: "http://\(Self.name):\(server.port)/"))
        let client = testClient(baseURL: baseURL, .curl) {
            $0.resolve = [.init(host: Self.name, port: server.port, addresses: ["127.0.0.1"])]
        }
        let response = try await client.response(method: .get, path: "headers")
        #expect(response.statusCode == 200)
        #expect((response.data.jsonObject["headers"] as? [String: String])?["Host"] == "\(Self.name):\(server.port)")
        #expect(response.metrics.transfer?.remoteAddress == "127.0.0.1")
        // Another port of the same host is not overridden: DNS is asked, and knows no such name.
        let otherPort = testClient(baseURL: try #require(URL(string: "http://\(Self.name):\(server.port + 1)/")), .curl) {
            $0.resolve = [.init(host: Self.name, port: server.port, addresses: ["127.0.0.1"])]
        }
        await #expect(throws: ConveyorError.self) { try await otherPort.get("get") }
        #expect(server.requestCount(path: "/get") == 0)
    }

    @Test("An IPv6 address, bracketed or not, and a fallback address list (curl)")
    func ipv6AndLists() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let baseURL = try #require(URL(string: "http://\(Self.name):\(server.port)/"))
        // ::1 is tried first and refused (the server listens on 127.0.0.1 only); 127.0.0.1 answers.
        for first in ["::1", "[::1]"] {
            let client = testClient(baseURL: baseURL, .curl) {
                $0.resolve = [.init(host: Self.name.uppercased(), port: server.port, addresses: [first, "127.0.0.1"])]
            }
            #expect(try await client.response(method: .get, path: "get").statusCode == 200)
        }
    }

    @Test("TLS verifies the URL's host, not the address: a name the certificate lacks is refused (curl)")
    func tlsVerifiesTheName() async throws {
        let server = try await TLSTestServer.shared()
        func client(_ host: String) throws -> HTTPClient {
            testClient(baseURL: try #require(URL(string: "https://\(host):\(server.port)/")), .curl) {
                $0.resolve = [.init(host: host, port: server.port, addresses: ["127.0.0.1"])]
                $0.tls.certificateAuthorities = [.pemFile(server.certificateAuthority)]
            }
        }
        let named = try await client(Self.name).response(method: .get, path: "anything")
        #expect(named.statusCode == 200)
        #expect(String(decoding: named.data, as: UTF8.self) == "secure")
        await #expect {
            try await client("other.conveyor.test").get("anything")
        } throws: { error in
            guard case .serverTrustFailed(let host, _) = error as? ConveyorError else { return false }
            return host == "other.conveyor.test"
        }
    }

    @Test("URLSession refuses overrides with a typed error, at validation and per request")
    func urlSessionRefuses() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let overrides = [HTTPClient.AddressOverride(host: Self.name, port: server.port, addresses: ["127.0.0.1"])]
        let client = testClient(baseURL: try #require(URL(string: "http://\(Self.name):\(server.port)/")), .urlSession) {
            $0.resolve = overrides
        }
        await #expect {
            try await client.get("get")
        } throws: { error in
            guard case .routeFailed(.unsupportedByTransport(_, .urlSession)) = error as? ConveyorError else { return false }
            return true
        }
        var configuration = HTTPClient.Configuration()
        configuration.resolve = overrides
        configuration.transport = .urlSession
        #expect(throws: ConveyorError.self) { try configuration.validate() }
        #expect(server.receivedRequests.isEmpty)
    }

    @Test(
        "A malformed entry is a typed error on both transports, from validate() and from every request",
        arguments: HTTPClient.TransportKind.testedKinds)
    func malformedEntries(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let bad: [(HTTPClient.AddressOverride, String)] = [
            (.init(host: "localhost", port: server.port, addresses: ["not-an-address"]), "not-an-address"),
            (.init(host: "localhost", port: server.port, addresses: ["127.0.0.1,10.0.0.1"]), "127.0.0.1,10.0.0.1"),
            (.init(host: "localhost", port: 0, addresses: ["127.0.0.1"]), "port 0"),
            (.init(host: "evil:80:10.0.0.1,localhost", port: server.port, addresses: ["127.0.0.1"]), "host"),
            (.init(host: "localhost", port: server.port, addresses: []), "no address"),
        ]
        for (entry, detailMarker) in bad {
            var configuration = HTTPClient.Configuration()
            configuration.transport = transport
            configuration.resolve = [entry]
            #expect {
                try configuration.validate()
            } throws: { error in
                guard case .routeFailed(.invalidAddressOverride(let reported, let detail)) = error as? ConveyorError else { return false }
                return reported == entry && detail.contains(detailMarker)
            }
            let client = testClient(baseURL: try #require(URL(string: "http://localhost:\(server.port)/")), transport) {
                $0.resolve = [entry]
            }
            await #expect {
                try await client.get("get")
            } throws: { error in
                guard case .routeFailed(.invalidAddressOverride(let reported, _)) = error as? ConveyorError else { return false }
                return reported == entry
            }
        }
        #expect(server.receivedRequests.isEmpty)
    }
}

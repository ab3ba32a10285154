import Conveyor
import Foundation
import Testing

/// Certificate validation, custom authorities, pinning and HTTP/2, against a hypercorn HTTPS
/// server whose certificate comes from a CA made for the test.
@Suite("TLS: custom authorities, public-key pins, HTTP/2 (curl transport)")
struct TLSTests {
    private func client(
        _ server: TLSTestServer, transport: HTTPClient.TransportKind = .curl, _ tls: (inout TLSConfiguration) -> Void = { _ in }
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.cache = nil
        configuration.monitorsReachability = false
        configuration.transport = transport
        tls(&configuration.tls)
        return HTTPClient(baseURL: server.baseURL, configuration: configuration)
    }

    private func expectTrustFailure(_ client: HTTPClient, reasonContains marker: String) async {
        await #expect {
            try await client.get("anything")
        } throws: { error in
            guard case .serverTrustFailed(let host, let reason) = error as? ConveyorError else { return false }
            return host == "127.0.0.1" && reason.lowercased().contains(marker)
        }
    }

    @Test("The default configuration refuses a certificate from an unknown CA", arguments: HTTPClient.TransportKind.testedKinds)
    func unknownAuthorityRefused(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        await expectTrustFailure(client(server, transport: transport), reasonContains: "certificate")
        // The documented defaults, field by field (the refusal above is the same on the wire).
        let tls = HTTPClient.Configuration.default.tls
        #expect(!tls.allowsInvalidCertificates && tls.trustsSystemCertificateAuthorities)
        #expect(tls.certificateAuthorities.isEmpty && tls.pinnedPublicKeyHashes.isEmpty)
        withExtendedLifetime(server) {}
    }

    @Test("A custom CA from a PEM file, added to the system's, makes the certificate valid")
    func customAuthorityFileAccepted() async throws {
        let server = try await TLSTestServer.shared()
        let client = client(server) { $0.certificateAuthorities = [.pemFile(server.certificateAuthority)] }
        let response = try await client.response(method: .get, path: "anything")
        #expect(response.statusCode == 200)
        #expect(String(decoding: response.data, as: UTF8.self) == "secure")
    }

    @Test("A custom CA as PEM data replacing the system's store is the only trust anchor")
    func customAuthorityDataReplacesSystem() async throws {
        let server = try await TLSTestServer.shared()
        let pem = try Data(contentsOf: server.certificateAuthority)
        let trusted = client(server) {
            $0.certificateAuthorities = [.pemData(pem)]
            $0.trustsSystemCertificateAuthorities = false
        }
        #expect(try await trusted.response(method: .get, path: "anything").statusCode == 200)
        // Another throwaway CA's certificate is not an anchor for this server.
        let other = try await TLSTestServer.shared("other")
        let wrongAnchor = client(server) {
            $0.certificateAuthorities = [.pemFile(other.certificateAuthority)]
            $0.trustsSystemCertificateAuthorities = false
        }
        await expectTrustFailure(wrongAnchor, reasonContains: "certificate")
    }

    @Test("The right pin (one of several) is accepted")
    func rightPinAccepted() async throws {
        let server = try await TLSTestServer.shared()
        let backup = Data(repeating: 7, count: 32).base64EncodedString()
        let client = client(server) {
            $0.certificateAuthorities = [.pemFile(server.certificateAuthority)]
            $0.pinnedPublicKeyHashes = [backup, server.publicKeyPin]
        }
        #expect(try await client.response(method: .get, path: "anything").statusCode == 200)
    }

    @Test("A wrong pin fails with serverTrustFailed naming the host and the pinning", arguments: HTTPClient.TransportKind.testedKinds)
    func wrongPinRefused(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        let client = client(server, transport: transport) {
            $0.certificateAuthorities = [.pemFile(server.certificateAuthority)]
            $0.pinnedPublicKeyHashes = [Data(repeating: 1, count: 32).base64EncodedString()]
        }
        // curl: the key matches no pin; URLSession: it cannot check pins, so it refuses.
        await expectTrustFailure(client, reasonContains: transport == .curl ? "pinned" : "curl transport")
    }

    @Test("Pins are checked even when invalid certificates are allowed")
    func pinsCheckedWithoutValidation() async throws {
        let server = try await TLSTestServer.shared()
        let unpinned = client(server) { $0.allowsInvalidCertificates = true }
        #expect(try await unpinned.response(method: .get, path: "anything").statusCode == 200)
        let pinned = client(server) {
            $0.allowsInvalidCertificates = true
            $0.pinnedPublicKeyHashes = [Data(repeating: 2, count: 32).base64EncodedString()]
        }
        await expectTrustFailure(pinned, reasonContains: "pinned")
    }

    @Test("A malformed pin or an unreadable CA file fails every HTTPS request with the reason")
    func badTrustSettings() async throws {
        let server = try await TLSTestServer.shared()
        await expectTrustFailure(client(server) { $0.pinnedPublicKeyHashes = ["not-a-hash"] }, reasonContains: "not-a-hash")
        let missing = URL(fileURLWithPath: "/nonexistent/conveyor-ca.pem")
        await expectTrustFailure(client(server) { $0.certificateAuthorities = [.pemFile(missing)] }, reasonContains: "could not be read")
    }

    @Test("HTTP/2 is negotiated with a server that offers it, and the metrics say so")
    func http2Negotiated() async throws {
        let server = try await TLSTestServer.shared()
        let client = client(server) { $0.certificateAuthorities = [.pemFile(server.certificateAuthority)] }
        let first = try await client.response(method: .get, path: "one")
        let second = try await client.response(method: .get, path: "two")
        #expect(first.response.allHeaderFields.first { ($0.key as? String)?.lowercased() == "x-http-version" }?.value as? String == "2")
        let metrics = try #require(second.metrics.transfer)
        #expect(metrics.httpVersion == "HTTP/2")
        #expect(metrics.reusedConnection)
        let handshake = try #require(first.metrics.transfer?.secureConnection)
        #expect(handshake > 0)
    }
}

extension HTTPClient.TransportKind {
    /// The transports the suites compare: both on Linux, URLSession elsewhere.
    static var testedKinds: [HTTPClient.TransportKind] {
        #if os(Linux)
            [.curl, .urlSession]
        #else
            [.urlSession]
        #endif
    }
}

import Conveyor
import Foundation
import Testing

/// Certificate validation, custom authorities, pinning and HTTP/2, against a hypercorn HTTPS
/// server whose certificate comes from a CA made for the test.
///
/// Every test runs on both transports except the HTTP/2 one. On URLSession (corelibs, Linux)
/// the same settings get what the documentation promises instead of the curl transport's
/// checks: custom authorities and pins refuse every HTTPS request (it cannot check them, and
/// must not silently skip them), and `allowsInvalidCertificates` cannot turn validation off.
@Suite("TLS: custom authorities, public-key pins, HTTP/2 (both transports; HTTP/2 on curl)")
struct TLSTests {
    /// What URLSession's refusal of custom trust settings says.
    private static let needsCurl = "curl transport"

    private func client(
        _ server: TLSTestServer, transport: HTTPClient.TransportKind, _ tls: (inout TLSConfiguration) -> Void = { _ in }
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

    /// The request succeeds with the server's "secure" on curl; URLSession refuses it, naming the
    /// curl transport.
    private func expectAcceptedOnCurl(_ client: HTTPClient, _ transport: HTTPClient.TransportKind) async throws {
        guard transport == .curl else { return await expectTrustFailure(client, reasonContains: Self.needsCurl) }
        let response = try await client.response(method: .get, path: "anything")
        #expect(response.statusCode == 200)
        #expect(String(decoding: response.data, as: UTF8.self) == "secure")
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

    @Test(
        "A custom CA from a PEM file, added to the system's, makes the certificate valid (URLSession refuses it)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func customAuthorityFileAccepted(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        let client = client(server, transport: transport) { $0.certificateAuthorities = [.pemFile(server.certificateAuthority)] }
        try await expectAcceptedOnCurl(client, transport)
    }

    @Test(
        "A custom CA as PEM data replacing the system's store is the only trust anchor (URLSession refuses both)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func customAuthorityDataReplacesSystem(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        let pem = try Data(contentsOf: server.certificateAuthority)
        let trusted = client(server, transport: transport) {
            $0.certificateAuthorities = [.pemData(pem)]
            $0.trustsSystemCertificateAuthorities = false
        }
        try await expectAcceptedOnCurl(trusted, transport)
        // Another throwaway CA's certificate is not an anchor for this server.
        let other = try await TLSTestServer.shared("other")
        let wrongAnchor = client(server, transport: transport) {
            $0.certificateAuthorities = [.pemFile(other.certificateAuthority)]
            $0.trustsSystemCertificateAuthorities = false
        }
        await expectTrustFailure(wrongAnchor, reasonContains: transport == .curl ? "certificate" : Self.needsCurl)
    }

    @Test("The right pin (one of several) is accepted (URLSession refuses it)", arguments: HTTPClient.TransportKind.testedKinds)
    func rightPinAccepted(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        let backup = Data(repeating: 7, count: 32).base64EncodedString()
        let client = client(server, transport: transport) {
            $0.certificateAuthorities = [.pemFile(server.certificateAuthority)]
            $0.pinnedPublicKeyHashes = [backup, server.publicKeyPin]
        }
        try await expectAcceptedOnCurl(client, transport)
    }

    @Test("A wrong pin fails with serverTrustFailed naming the host and the pinning", arguments: HTTPClient.TransportKind.testedKinds)
    func wrongPinRefused(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        let client = client(server, transport: transport) {
            $0.certificateAuthorities = [.pemFile(server.certificateAuthority)]
            $0.pinnedPublicKeyHashes = [Data(repeating: 1, count: 32).base64EncodedString()]
        }
        // curl: the key matches no pin; URLSession: it cannot check pins, so it refuses.
        await expectTrustFailure(client, reasonContains: transport == .curl ? "pinned" : Self.needsCurl)
    }

    @Test(
        "Pins are checked even when invalid certificates are allowed (URLSession on Linux cannot turn validation off)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func pinsCheckedWithoutValidation(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        let unpinned = client(server, transport: transport) { $0.allowsInvalidCertificates = true }
        if transport == .curl {
            #expect(try await unpinned.response(method: .get, path: "anything").statusCode == 200)
        } else {
            // corelibs URLSession asks no server-trust question: the unknown CA is still refused.
            await expectTrustFailure(unpinned, reasonContains: "certificate")
        }
        let pinned = client(server, transport: transport) {
            $0.allowsInvalidCertificates = true
            $0.pinnedPublicKeyHashes = [Data(repeating: 2, count: 32).base64EncodedString()]
        }
        await expectTrustFailure(pinned, reasonContains: transport == .curl ? "pinned" : Self.needsCurl)
    }

    @Test(
        "A malformed pin or an unreadable CA file fails every HTTPS request with the reason",
        arguments: HTTPClient.TransportKind.testedKinds)
    func badTrustSettings(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        // URLSession refuses any custom trust setting before looking at it.
        let malformed = client(server, transport: transport) { $0.pinnedPublicKeyHashes = ["not-a-hash"] }
        await expectTrustFailure(malformed, reasonContains: transport == .curl ? "not-a-hash" : Self.needsCurl)
        let missing = URL(fileURLWithPath: "/nonexistent/conveyor-ca.pem")
        let unreadable = client(server, transport: transport) { $0.certificateAuthorities = [.pemFile(missing)] }
        await expectTrustFailure(unreadable, reasonContains: transport == .curl ? "could not be read" : Self.needsCurl)
    }

    /// curl only: URLSession on Linux can trust this server's throwaway CA by no setting (custom
    /// authorities are refused, validation cannot be turned off) and reports no transfer
    /// metrics, so it never reaches HTTP/2 here; the tests above check that refusal.
    @Test("HTTP/2 is negotiated with a server that offers it, and the metrics say so (curl)")
    func http2Negotiated() async throws {
        let server = try await TLSTestServer.shared()
        let client = client(server, transport: .curl) { $0.certificateAuthorities = [.pemFile(server.certificateAuthority)] }
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

import ConveyorTestSupport
import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The URLSession transport's answers to server-trust challenges on Apple platforms, decided in
/// platform-neutral code: SHA-256, the SubjectPublicKeyInfo of a certificate, and which
/// configuration gets which answer. Only the Security framework's calls are left to Apple.
@Suite("Server trust on URLSession: pins, SPKI hashes and answers, decided on every platform")
struct ServerTrustPolicyTests {
    /// A self-signed certificate made by openssl with a key of `algorithm`, and the pin openssl
    /// computes for it the way the documentation of ``TLSConfiguration/pinnedPublicKeyHashes`` says.
    struct MadeCertificate {
        let pem: Data
        let der: Data
        let pin: String
    }

    static func makeCertificate(_ keyArguments: [String]) throws -> MadeCertificate {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-spki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("certificate.pem").path
        try SetupTools.run(
            "/usr/bin/env",
            ["openssl", "req", "-x509", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", certificate]
                + keyArguments, what: "openssl req")
        let pin = try SetupTools.run(
            "/bin/sh",
            [
                "-c",
                "openssl x509 -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            ],
            what: "computing the pin")
        let der = try SetupTools.run(
            "/bin/sh", ["-c", "openssl x509 -in '\(certificate)' -outform der | base64 -w0"], what: "converting to DER")
        return MadeCertificate(
            pem: try Data(contentsOf: URL(fileURLWithPath: certificate)),
            der: try #require(Data(base64Encoded: der.trimmingCharacters(in: .whitespacesAndNewlines))),
            pin: pin.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("SHA-256 gives FIPS 180-4's digests (one block, two blocks, a million bytes)")
    func sha256Vectors() {
        func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(SHA256.hash(Data())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(SHA256.hash(Data("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hex(SHA256.hash(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            hex(SHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // 55 and 56 bytes: the length fits in the last block, or needs another one.
        #expect(hex(SHA256.hash([UInt8](repeating: 0, count: 55))) == "02779466cdec163811d078815c633f21901413081449002f24aa3e80f0b88ef7")
        #expect(hex(SHA256.hash([UInt8](repeating: 0, count: 56))) == "d4817aa5497628e7c77e6b606107042bbba3130888c5f47a375e6179be789fbb")
    }

    @Test(
        "The pin of a certificate is openssl's, for RSA, EC and Ed25519 keys",
        arguments: [["-newkey", "rsa:2048"], ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"], ["-newkey", "ed25519"]])
    func pinMatchesOpenSSL(keyArguments: [String]) throws {
        let made = try Self.makeCertificate(keyArguments)
        let hash = try #require(ServerTrustPolicy.publicKeyHash(ofCertificate: made.der))
        #expect(hash.base64EncodedString() == made.pin)
        #expect(CertificateDER.certificates(inPEM: made.pem) == [made.der])
    }

    @Test("Bytes that are not a certificate have no public key, and never crash the reader")
    func malformedCertificates() throws {
        let made = try Self.makeCertificate(["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
        #expect(ServerTrustPolicy.publicKeyHash(ofCertificate: Data()) == nil)
        #expect(ServerTrustPolicy.publicKeyHash(ofCertificate: Data([0x30, 0x84, 0xff, 0xff, 0xff, 0xff])) == nil)
        // Every truncation of a real certificate is refused, not read past its end.
        for length in stride(from: 0, to: made.der.count, by: 7) {
            #expect(ServerTrustPolicy.publicKeyHash(ofCertificate: made.der.prefix(length)) == nil)
        }
        #expect(CertificateDER.certificates(inPEM: Data("no certificate here".utf8)) == nil)
        #expect(CertificateDER.certificates(inPEM: Data("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----".utf8)) == nil)
    }

    @Test("Nothing customised: the system decides alone, and nothing is evaluated or read")
    func defaultIsTheSystems() {
        let policy = ServerTrustPolicy(.default)
        #expect(policy.leavesTrustToTheSystem)
        let answer = policy.answer(
            evaluationFailure: {
                Issue.record("evaluated")
                return nil
            },
            leafCertificate: {
                Issue.record("read")
                return nil
            })
        #expect(answer == .performDefaultHandling)
    }

    @Test("Custom authorities: evaluated with them as anchors, beside the system's unless those are turned off")
    func customAuthorities() throws {
        let authority = try Self.makeCertificate(["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
        let other = try Self.makeCertificate(["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
        var tls = TLSConfiguration()
        tls.certificateAuthorities = [.pemData(authority.pem + other.pem)]
        var policy = ServerTrustPolicy(tls)
        #expect(policy.anchors == [authority.der, other.der] && policy.replacesAnchors && policy.trustsSystemCertificateAuthorities)
        #expect(policy.answer(evaluationFailure: { nil }, leafCertificate: { nil }) == .useCredential)
        #expect(
            policy.answer(evaluationFailure: { "unknown issuer" }, leafCertificate: { nil })
                == .reject(reason: "the certificate is not trusted: unknown issuer"))
        tls.trustsSystemCertificateAuthorities = false
        policy = ServerTrustPolicy(tls)
        #expect(policy.replacesAnchors && !policy.trustsSystemCertificateAuthorities && !policy.leavesTrustToTheSystem)
        // Only the system's authorities turned off, with no custom ones: nothing is trusted,
        // which the evaluation (given no anchors) reports.
        policy = ServerTrustPolicy(
            {
                var tls = TLSConfiguration()
                tls.trustsSystemCertificateAuthorities = false
                return tls
            }())
        #expect(policy.replacesAnchors && policy.anchors.isEmpty)
    }

    @Test("Pins: the leaf's key must match one; a backup pin and the sha256// prefix are accepted")
    func pins() throws {
        let leaf = try Self.makeCertificate(["-newkey", "rsa:2048"])
        var tls = TLSConfiguration()
        tls.pinnedPublicKeyHashes = [Data(repeating: 7, count: 32).base64EncodedString(), "sha256//\(leaf.pin)"]
        let policy = ServerTrustPolicy(tls)
        #expect(policy.answer(evaluationFailure: { nil }, leafCertificate: { leaf.der }) == .useCredential)
        // A failed evaluation is refused before the pins are looked at.
        #expect(policy.answer(evaluationFailure: { "expired" }, leafCertificate: { leaf.der }) != .useCredential)

        tls.pinnedPublicKeyHashes = [Data(repeating: 7, count: 32).base64EncodedString()]
        let wrong = ServerTrustPolicy(tls).answer(evaluationFailure: { nil }, leafCertificate: { leaf.der })
        guard case .reject(let reason) = wrong else {
            Issue.record("a wrong pin was accepted")
            return
        }
        #expect(reason.contains("pinned") && reason.contains("sha256//\(leaf.pin)"))
        #expect(ServerTrustPolicy(tls).answer(evaluationFailure: { nil }, leafCertificate: { nil }) != .useCredential)
    }

    @Test("Invalid certificates allowed: nothing is evaluated, but pins still apply")
    func allowsInvalidCertificates() throws {
        let leaf = try Self.makeCertificate(["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
        var tls = TLSConfiguration()
        tls.allowsInvalidCertificates = true
        let evaluated = { () -> String? in
            Issue.record("evaluated although invalid certificates are allowed")
            return "untrusted"
        }
        #expect(ServerTrustPolicy(tls).answer(evaluationFailure: evaluated, leafCertificate: { nil }) == .useCredential)
        tls.pinnedPublicKeyHashes = [Data(repeating: 2, count: 32).base64EncodedString()]
        #expect(ServerTrustPolicy(tls).answer(evaluationFailure: evaluated, leafCertificate: { leaf.der }) != .useCredential)
        tls.pinnedPublicKeyHashes = [leaf.pin]
        #expect(ServerTrustPolicy(tls).answer(evaluationFailure: evaluated, leafCertificate: { leaf.der }) == .useCredential)
    }

    @Test("A malformed pin or an unreadable authority refuses every connection with the reason")
    func unusableConfiguration() {
        var tls = TLSConfiguration()
        tls.pinnedPublicKeyHashes = ["not-a-hash"]
        #expect(
            ServerTrustPolicy(tls).answer(evaluationFailure: { nil }, leafCertificate: { nil })
                == .reject(reason: tls.invalidPinDescription()!))
        tls = TLSConfiguration()
        tls.certificateAuthorities = [.pemFile(URL(fileURLWithPath: "/nonexistent/ca.pem"))]
        let policy = ServerTrustPolicy(tls)
        #expect(policy.configurationError?.contains("could not be read") == true)
        #expect(!policy.leavesTrustToTheSystem)
        tls.certificateAuthorities = [.pemData(Data("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n".utf8))]
        #expect(ServerTrustPolicy(tls).configurationError != nil)
    }

    @Test("A refused server reaches the operation as serverTrustFailed with the policy's reason, not as a cancel")
    func refusalBecomesServerTrustFailed() {
        let url = URL(string: "https://api.example.com/x")
        let refused = URLSessionDelegateRouter.completionError(URLError(.cancelled), url: url, trustFailure: "no pin matched")
        guard case .serverTrustFailed(let host, let reason)? = refused as? ConveyorError else {
            Issue.record("not serverTrustFailed: \(refused)")
            return
        }
        #expect(host == "api.example.com" && reason == "no pin matched")
        let cancelled = URLSessionDelegateRouter.completionError(URLError(.cancelled), url: url, trustFailure: nil)
        if case .serverTrustFailed? = cancelled as? ConveyorError { Issue.record("a plain cancel became a trust failure") }
    }
}

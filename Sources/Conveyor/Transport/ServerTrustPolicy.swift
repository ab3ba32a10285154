import Foundation

/// What the URLSession transport answers when a server's certificate is to be trusted, from a
/// client's ``TLSConfiguration``: the decision, in code every platform compiles and Linux
/// tests. Apple platforms ask this question for every new TLS connection
/// (`NSURLAuthenticationMethodServerTrust`); only the calls into the Security framework that
/// evaluate the chain and read the leaf certificate live in `ServerTrustPolicy+Apple.swift`.
/// (corelibs URLSession on Linux never asks it; the curl transport does the same checks there
/// with libcurl's options.)
///
/// The rules are the curl transport's, so that one configuration means the same everywhere:
/// - Nothing customised: the system decides alone (`performDefaultHandling`).
/// - Custom authorities: the chain is evaluated with them as anchors, beside the system's or
///   (``TLSConfiguration/trustsSystemCertificateAuthorities`` off) instead of them.
/// - ``TLSConfiguration/allowsInvalidCertificates``: no evaluation, but pins still apply.
/// - Pins: the SHA-256 of the leaf certificate's SubjectPublicKeyInfo must be one of them (the
///   leaf only, as `CURLOPT_PINNEDPUBLICKEY` checks it).
/// - A configuration that cannot be honoured (a malformed pin, an unreadable authority file)
///   refuses every connection, never silently checks less.
struct ServerTrustPolicy: Sendable, Equatable {
    /// The answer to one server-trust challenge.
    enum Answer: Sendable, Equatable {
        /// Let the system evaluate as it always does.
        case performDefaultHandling
        /// Trust the connection (answer with the challenge's own trust).
        case useCredential
        /// Refuse the connection; the request fails with ``ConveyorError/serverTrustFailed(host:reason:)``.
        case reject(reason: String)
    }

    /// The custom authorities' certificates, DER.
    let anchors: [Data]
    /// Whether the system's authorities stay trusted beside ``anchors``.
    let trustsSystemCertificateAuthorities: Bool
    /// The pins' SHA-256 digests, 32 bytes each.
    let pins: Set<Data>
    /// Whether chain evaluation is skipped (development only; pins still apply).
    let allowsInvalidCertificates: Bool
    /// Why no connection can be trusted as configured, if so.
    let configurationError: String?

    init(_ tls: TLSConfiguration) {
        trustsSystemCertificateAuthorities = tls.trustsSystemCertificateAuthorities
        allowsInvalidCertificates = tls.allowsInvalidCertificates
        var configurationError = tls.invalidPinDescription()
        pins = Set(
            tls.pinnedPublicKeyHashes.compactMap { pin in
                Data(base64Encoded: pin.hasPrefix("sha256//") ? String(pin.dropFirst(8)) : pin)
            })
        var anchors: [Data] = []
        if !tls.certificateAuthorities.isEmpty {
            do {
                let pem = try tls.authorityPEM()
                if let certificates = CertificateDER.certificates(inPEM: pem) {
                    anchors = certificates
                } else {
                    configurationError = configurationError ?? "a certificate authority's PEM block is not valid base64"
                }
            } catch {
                if case .serverTrustFailed(_, let reason) = error { configurationError = configurationError ?? reason }
            }
        }
        self.anchors = anchors
        self.configurationError = configurationError
    }

    /// Whether the platform's default evaluation is the whole answer (nothing customised).
    var leavesTrustToTheSystem: Bool {
        configurationError == nil && anchors.isEmpty && trustsSystemCertificateAuthorities && pins.isEmpty
            && !allowsInvalidCertificates
    }

    /// Whether the evaluation must be given ``anchors`` (and perhaps told to trust only them).
    var replacesAnchors: Bool { !anchors.isEmpty || !trustsSystemCertificateAuthorities }

    /// Decides a challenge.
    /// - Parameters:
    ///   - evaluationFailure: Evaluates the chain (with ``anchors`` when ``replacesAnchors``) and
    ///     says why it is not trusted, nil when it is. Not called when invalid certificates are
    ///     allowed, nor when the system decides alone.
    ///   - leafCertificate: The DER bytes of the server's own certificate; called only when
    ///     there are pins.
    /// - Returns: The answer.
    func answer(evaluationFailure: () -> String?, leafCertificate: () -> Data?) -> Answer {
        if leavesTrustToTheSystem { return .performDefaultHandling }
        if let configurationError { return .reject(reason: configurationError) }
        if !allowsInvalidCertificates, let failure = evaluationFailure() {
            return .reject(reason: "the certificate is not trusted: \(failure)")
        }
        if !pins.isEmpty {
            guard let leaf = leafCertificate(), let hash = Self.publicKeyHash(ofCertificate: leaf) else {
                return .reject(reason: "the server's certificate could not be read to check the pinned public keys")
            }
            guard pins.contains(hash) else {
                return .reject(
                    reason: "the server's public key (sha256//\(hash.base64EncodedString())) matches none of the pinned public keys")
            }
        }
        return .useCredential
    }

    /// The pin of a certificate: the SHA-256 of its SubjectPublicKeyInfo, nil when the bytes
    /// are not a certificate.
    static func publicKeyHash(ofCertificate der: Data) -> Data? {
        CertificateDER.subjectPublicKeyInfo(ofCertificate: der).map { SHA256.hash($0) }
    }
}

import Foundation

/// How a client decides whether to trust a server's certificate.
///
/// The defaults trust the system's certificate authorities and nothing else. Custom
/// authorities, pinning and ``allowsInvalidCertificates`` are honoured by the curl transport
/// (``HTTPClient/TransportKind/curl``, which `.automatic` picks on Linux) and by URLSession on
/// Apple platforms (with the Security framework), with the same rules. corelibs URLSession on
/// Linux offers no way to change certificate validation, so a client that asks for custom
/// authorities or pins on the URLSession transport there fails every HTTPS request with
/// ``ConveyorError/serverTrustFailed(host:reason:)`` rather than silently not checking.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.tls.certificateAuthorities = [.pemFile(URL(fileURLWithPath: "/etc/myco/ca.pem"))]
/// configuration.tls.pinnedPublicKeyHashes = ["47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="]
/// ```
public struct TLSConfiguration: Sendable, Equatable {
    /// A certificate, or several, in PEM form (`-----BEGIN CERTIFICATE-----`).
    public enum Certificates: Sendable, Equatable {
        /// A PEM file, read when the client is created.
        case pemFile(URL)
        /// PEM text.
        case pemData(Data)
    }

    /// Certificate authorities trusted besides (or, with ``trustsSystemCertificateAuthorities``
    /// off, instead of) the system's. Default none.
    public var certificateAuthorities: [Certificates] = []
    /// Whether the system's certificate authorities are trusted. Default true; set false to
    /// trust only ``certificateAuthorities`` (a private PKI).
    public var trustsSystemCertificateAuthorities = true
    /// Public-key pins: the base64 SHA-256 of the server certificate's SubjectPublicKeyInfo,
    /// as in HPKP and `curl --pinnedpubkey` (`openssl x509 -pubkey -noout | openssl pkey
    /// -pubin -outform der | openssl dgst -sha256 -binary | base64`). When not empty, a
    /// connection whose certificate matches none of them fails with
    /// ``ConveyorError/serverTrustFailed(host:reason:)``. List a backup key too, so a key
    /// rotation does not lock the app out. Default none.
    public var pinnedPublicKeyHashes: [String] = []
    /// Accept any certificate — self-signed, expired, for another host. **Development only**:
    /// it removes the protection TLS exists for. Pins are still checked. Default false.
    public var allowsInvalidCertificates = false

    /// Creates the default configuration: the system's authorities, no pins.
    public init() {}

    /// The default: the system's authorities, no pins, validation on.
    public static var `default`: TLSConfiguration { TLSConfiguration() }

    /// Whether this asks for anything beyond the platform's own validation (which only the
    /// curl transport can do on Linux; URLSession can on Apple platforms).
    var customizesTrust: Bool {
        !certificateAuthorities.isEmpty || !trustsSystemCertificateAuthorities || !pinnedPublicKeyHashes.isEmpty
    }

    /// Checks the pins: each must be base64 for exactly 32 bytes.
    /// - Returns: A description of the first bad pin, or nil.
    func invalidPinDescription() -> String? {
        for pin in pinnedPublicKeyHashes {
            let digest = pin.hasPrefix("sha256//") ? String(pin.dropFirst(8)) : pin
            guard let bytes = Data(base64Encoded: digest), bytes.count == 32 else {
                return "the pin \"\(pin)\" is not the base64 of a SHA-256 hash (32 bytes)"
            }
        }
        return nil
    }

    /// The PEM text of every custom authority, concatenated.
    /// - Throws: ``ConveyorError/serverTrustFailed(host:reason:)`` when a file cannot be read
    ///   or holds no certificate.
    func authorityPEM() throws(ConveyorError) -> Data {
        var bundle = Data()
        for source in certificateAuthorities {
            let pem: Data
            switch source {
            case .pemData(let data):
                pem = data
            case .pemFile(let url):
                guard let data = try? Data(contentsOf: url) else {
                    throw .serverTrustFailed(host: "any host", reason: "the certificate authority file \(url.path) could not be read")
                }
                pem = data
            }
            guard String(decoding: pem, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
                throw .serverTrustFailed(
                    host: "any host", reason: "a certificate authority holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
            }
            bundle.append(pem)
            bundle.append(UInt8(ascii: "\n"))
        }
        return bundle
    }
}

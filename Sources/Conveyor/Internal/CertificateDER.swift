import Foundation

/// The little of X.509 (RFC 5280 §4.1) that pinning and custom authorities need: certificates
/// out of PEM text, and the SubjectPublicKeyInfo out of a certificate's DER bytes. No
/// validation happens here; the platform evaluates the chain.
enum CertificateDER {
    /// The DER bytes of every `CERTIFICATE` block of PEM text, in order.
    /// - Returns: nil when a block's base64 does not decode, or no block is present.
    static func certificates(inPEM pem: Data) -> [Data]? {
        let text = String(decoding: pem, as: UTF8.self)
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        var certificates: [Data] = []
        var rest = text[...]
        while let start = rest.range(of: begin) {
            guard let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) else { return nil }
            let body = rest[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            guard let der = Data(base64Encoded: String(body)), !der.isEmpty else { return nil }
            certificates.append(der)
            rest = rest[stop.upperBound...]
        }
        return certificates.isEmpty ? nil : certificates
    }

    /// The whole SubjectPublicKeyInfo element (tag and length included) of a certificate: what
    /// a public-key pin is the SHA-256 of (`openssl x509 -pubkey | openssl pkey -pubin -outform der`).
    /// - Returns: nil when the bytes are not a certificate's DER structure.
    static func subjectPublicKeyInfo(ofCertificate der: Data) -> Data? {
        let bytes = [UInt8](der)
        // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
        guard let certificate = element(in: bytes, at: 0), certificate.tag == sequence,
            let tbs = element(in: bytes, at: certificate.contentStart), tbs.tag == sequence
        else { return nil }
        // TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer,
        //                               validity, subject, subjectPublicKeyInfo, … }
        var cursor = tbs.contentStart
        guard var field = element(in: bytes, at: cursor, within: tbs.end) else { return nil }
        if field.tag == explicitVersion {
            cursor = field.end
            guard let next = element(in: bytes, at: cursor, within: tbs.end) else { return nil }
            field = next
        }
        let expected: [UInt8] = [integer, sequence, sequence, sequence, sequence]  // serial … subject
        for tag in expected {
            guard field.tag == tag, let next = element(in: bytes, at: field.end, within: tbs.end) else { return nil }
            field = next
        }
        guard field.tag == sequence else { return nil }
        return Data(bytes[field.start..<field.end])
    }

    private static let sequence: UInt8 = 0x30
    private static let integer: UInt8 = 0x02
    private static let explicitVersion: UInt8 = 0xA0

    /// One DER element: its tag, where it starts, where its content starts and where it ends.
    private struct Element {
        let tag: UInt8
        let start: Int
        let contentStart: Int
        let end: Int
    }

    /// The element at `offset`, or nil when its header or length runs past `limit` (default:
    /// the end of `bytes`). Only definite lengths of up to 4 length bytes: DER has no other.
    private static func element(in bytes: [UInt8], at offset: Int, within limit: Int? = nil) -> Element? {
        let limit = limit ?? bytes.count
        guard offset + 2 <= limit else { return nil }
        let tag = bytes[offset]
        let first = bytes[offset + 1]
        var contentStart = offset + 2
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7f)
            guard (1...4).contains(count), contentStart + count <= limit else { return nil }
            for index in 0..<count { length = length << 8 | Int(bytes[contentStart + index]) }
            contentStart += count
        }
        guard length <= limit - contentStart else { return nil }
        return Element(tag: tag, start: offset, contentStart: contentStart, end: contentStart + length)
    }
}

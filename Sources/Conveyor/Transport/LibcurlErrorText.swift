import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What libcurl's error texts mean, for the failures whose result code says too little: both
/// transports sit on libcurl (corelibs URLSession too), and each maps its errors once
/// (`CurlErrors`, `URLSessionErrors`) with these rules where its code is a generic one.
///
/// | curl's text | code |
/// |---|---|
/// | failed to connect, couldn't connect | `.cannotConnectToHost` |
/// | could not resolve host | `.cannotFindHost` |
/// | transfer closed…, connection reset, recv/send failure, empty reply from server | `.networkConnectionLost` |
/// | received HTTP/0.9 (a non-HTTP answer or a malformed status line), illegal chunk sizes, out of memory (libcurl's verdict on an oversized header section), an unsupported HTTP version | `.badServerResponse` |
/// | error while processing content unencoding, unrecognized content encoding | `.cannotDecodeContentData` |
/// | any other SSL/TLS failure (wrong version number: TLS to a plain port) | `.secureConnectionFailed` |
enum LibcurlErrorText {
    /// The codes that say too little to act on: a text rule may replace them.
    static let genericCodes: Set<URLError.Code> = [.unknown, .badServerResponse, .unsupportedURL]

    private static let rules: [(markers: [String], code: URLError.Code)] = [
        (["failed to connect", "couldn't connect", "could not connect"], .cannotConnectToHost),
        (["could not resolve host", "couldn't resolve host"], .cannotFindHost),
        (
            ["transfer closed", "connection reset", "recv failure", "send failure", "empty reply", "connection died"],
            .networkConnectionLost
        ),
        (["http/0.9", "chunked-encoding", "out of memory", "weird server reply", "unsupported protocol version"], .badServerResponse),
        (["content unencoding", "content decoding", "unrecognized content encoding"], .cannotDecodeContentData),
        (["ssl", "tls", "openssl"], .secureConnectionFailed),
    ]

    /// Whether libcurl's `text` says the server's certificate was refused ("SSL certificate
    /// problem: …", "SSL: no alternative certificate subject name matches …"): a TLS failure
    /// that is a trust decision, reported as ``ConveyorError/serverTrustFailed(host:reason:)``.
    static func isCertificateFailure(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return certificateMarkers.contains(where: lowered.contains)
    }

    private static let certificateMarkers = [
        "certificate problem", "certificate verify failed", "subject name", "certificate has expired",
        "self-signed certificate", "self signed certificate", "unable to get local issuer", "peer certificate",
    ]

    /// The code libcurl's `text` stands for; nil when no rule knows it.
    static func code(for text: String) -> URLError.Code? {
        let lowered = text.lowercased()
        return rules.first { rule in rule.markers.contains(where: lowered.contains) }?.code
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The errors a `URLSession` task ends with, as the codes a caller, a retry policy, the cache
/// and the outbox act on: the URLSession transport's half of the one error vocabulary (the
/// curl transport's is `CurlErrors`). Decided here, once, before any delegate sees the error.
enum URLSessionErrors {
    /// corelibs reports many libcurl failures as code -1 (`unknown`), or under a code that
    /// does not fit, with only curl's text: a failed connect whose `errno` is neither
    /// `ECONNREFUSED` nor `ETIMEDOUT` (a server restarting, no route) is -1 "Failed to connect
    /// to …", an empty reply is `badServerResponse`, a non-HTTP answer `unsupportedURL`. Each
    /// gets the code `LibcurlErrorText` reads from the text, the original kept as
    /// `NSUnderlyingErrorKey`.
    /// The error a task ended with as the operation receives it: a certificate failure as
    /// ``ConveyorError/serverTrustFailed(host:reason:)``, any other `URLError` with the code
    /// `normalized(_:)` gives it. Decided here, so no layer above reads texts.
    /// - Parameters:
    ///   - error: The task's error.
    ///   - url: The request's URL, naming the host when the error does not.
    static func decided(_ error: any Error, url: URL?) -> any Error {
        guard let error = error as? URLError else { return error }
        let normalized = normalized(error)
        return serverTrustFailure(normalized, url: url) ?? normalized
    }

    /// A TLS certificate failure as ``ConveyorError/serverTrustFailed(host:reason:)``. Apple
    /// platforms report them with `serverCertificate*` codes; corelibs on Linux with code -1
    /// (or `secureConnectionFailed`) and libcurl's text ("SSL certificate problem: …",
    /// "SSL: no alternative certificate subject name matches …").
    static func serverTrustFailure(_ error: URLError, url: URL?) -> ConveyorError? {
        let host = error.failingURL?.host ?? url?.host ?? "the server"
        if trustCodes.contains(error.code) { return .serverTrustFailed(host: host, reason: error.localizedDescription) }
        guard error.code == .unknown || error.code == .secureConnectionFailed else { return nil }
        let text = error.localizedDescription
        return LibcurlErrorText.isCertificateFailure(text) ? .serverTrustFailed(host: host, reason: text) : nil
    }

    /// The codes Apple's URLSession reports a refused server certificate with.
    static let trustCodes: Set<URLError.Code> = [
        .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot,
    ]

    static func normalized(_ error: URLError) -> URLError {
        guard LibcurlErrorText.genericCodes.contains(error.code), let code = LibcurlErrorText.code(for: error.localizedDescription),
            code != error.code
        else { return error }
        var userInfo = error.userInfo
        userInfo[NSUnderlyingErrorKey] = error as NSError
        return URLError(code, userInfo: userInfo)
    }
}

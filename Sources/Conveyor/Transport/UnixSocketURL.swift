import Foundation

/// The `http+unix` and `https+unix` URL form (AsyncHTTPClient's): the socket's path,
/// percent-encoded, is the host — `http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info`.
enum UnixSocketURL {
    /// The schemes, each with the scheme of the request sent over the socket.
    static let schemes = ["http+unix": "http", "https+unix": "https"]

    /// Whether `url` has one of the Unix socket schemes.
    static func isUnixSocket(_ url: URL?) -> Bool {
        guard let scheme = url?.scheme?.lowercased() else { return false }
        return schemes[scheme] != nil
    }

    /// The socket path of an `http+unix` URL and the URL sent over it (`http://localhost/…`,
    /// the same path, query and fragment); nil for other URLs.
    /// - Throws: ``ConveyorError/RouteFailureReason/invalidSocketURL(_:)`` when the host is not an absolute path.
    static func split(_ url: URL) throws(ConveyorError) -> (url: URL, socketPath: String)? {
        guard let scheme = url.scheme?.lowercased(), let sent = schemes[scheme] else { return nil }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let path = components.percentEncodedHost?.removingPercentEncoding, path.hasPrefix("/"), !path.utf8.contains(0)
        else { throw .routeFailed(reason: .invalidSocketURL(url.absoluteString)) }
        components.scheme = sent
        components.host = "localhost"
        components.port = nil
        guard let rewritten = components.url else { throw .routeFailed(reason: .invalidSocketURL(url.absoluteString)) }
        return (rewritten, path)
    }
}

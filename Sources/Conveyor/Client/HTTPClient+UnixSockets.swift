import Foundation

extension HTTPClient {
    /// Whether `url` reaches its server through a Unix domain socket: an `http+unix` or
    /// `https+unix` URL, whose host is the socket's path, percent-encoded
    /// (`http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info`; build one with
    /// ``unixSocketURL(socketPath:path:secure:)``). Such URLs work as base URLs and as absolute
    /// paths, with the curl transport.
    /// - Parameter url: The URL.
    /// - Returns: Whether its scheme is `http+unix` or `https+unix`.
    public static func isUnixSocketURL(_ url: URL) -> Bool { UnixSocketURL.isUnixSocket(url) }

    /// An `http+unix` URL: requests to it go over the Unix domain socket at `socketPath`.
    /// - Parameters:
    ///   - socketPath: The socket's absolute path.
    ///   - path: The path on the server, `/` by default.
    ///   - secure: Whether to speak TLS over the socket (`https+unix`); default false.
    /// - Returns: The URL, or nil when `socketPath` is not absolute or `path` does not start with `/`.
    public static func unixSocketURL(socketPath: String, path: String = "/", secure: Bool = false) -> URL? {
        guard socketPath.hasPrefix("/"), path.hasPrefix("/"),
            let host = socketPath.addingPercentEncoding(withAllowedCharacters: unreserved)
        else { return nil }
        return URL(string: "\(secure ? "https+unix" : "http+unix")://\(host)\(path)")
    }

    /// RFC 3986's unreserved characters (ASCII only: `.alphanumerics` has every script's letters).
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

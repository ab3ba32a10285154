import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A web origin (RFC 6454): scheme and host, lower-cased, and the port — the scheme's default
/// when the URL names none. The one comparison of origins in Conveyor: redirects, credential
/// headers, the authenticator, challenge answers, the cache's keys and invalidation (RFC 9111
/// §4.4) and the URLSession transport's connection admission all ask it.
struct Origin: Hashable, Sendable {
    let scheme: String
    let host: String
    let port: Int

    /// The origin of `url`; nil when it has no scheme or host.
    init?(_ url: URL?) {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? Self.defaultPort(of: scheme)
    }

    /// The origin a server's challenge comes from; `fallbackScheme` when the space names none.
    init(_ space: URLProtectionSpace, fallbackScheme: String) {
        scheme = space.protocol?.lowercased() ?? fallbackScheme
        host = space.host.lowercased()
        port = space.port
    }

    /// The port `scheme` (lower-cased) implies when a URL names none.
    static func defaultPort(of scheme: String) -> Int { scheme == "https" ? 443 : 80 }

    /// `url` with its origin spelled one way (RFC 3986 §6.2.3): scheme and host lower-cased and
    /// the scheme's default port left out, so `HTTP://Example.COM:80/x` reads `http://example.com/x`.
    /// The rest of the URL is kept as it is; a URL without an origin is returned unchanged.
    static func canonicalString(of url: URL) -> String {
        let text = url.absoluteString
        guard let scheme = url.scheme, let host = url.host, !host.isEmpty else { return text }
        let upper = { (byte: UInt8) in byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
        let lowerScheme = scheme.lowercased()
        // The usual URL is already canonical: nothing to rebuild (this runs on every cache lookup).
        if !scheme.utf8.contains(where: upper), !host.utf8.contains(where: upper), url.port != defaultPort(of: lowerScheme) {
            return text
        }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return text }
        components.scheme = lowerScheme
        components.percentEncodedHost = components.percentEncodedHost?.lowercased()
        if components.port == defaultPort(of: lowerScheme) { components.port = nil }
        return components.string ?? text
    }

    /// Whether two URLs share an origin; false when either has none.
    static func same(_ lhs: URL?, _ rhs: URL?) -> Bool {
        guard let lhs = Origin(lhs), let rhs = Origin(rhs) else { return false }
        return lhs == rhs
    }

    /// Whether `space` (a server's challenge) comes from the origin of `url`: scheme, host and
    /// port; false when `url` has none.
    static func same(_ space: URLProtectionSpace, _ url: URL?) -> Bool {
        guard let origin = Origin(url) else { return false }
        return origin == Origin(space, fallbackScheme: origin.scheme)
    }
}

/// The origins a client's credentials may go to: its base URL's, and those the user names in
/// ``HTTPClient/Configuration/credentialOrigins``. A client without a base URL has only the
/// named ones.
struct CredentialScope: Sendable {
    let origins: Set<Origin>

    init(baseURL: URL?, named: [URL]) {
        origins = Set(([baseURL] + named).compactMap { Origin($0) })
    }

    /// Whether `url` may receive the client's credentials.
    func contains(_ url: URL?) -> Bool {
        guard let origin = Origin(url) else { return false }
        return origins.contains(origin)
    }
}

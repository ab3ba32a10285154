import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A web origin (RFC 6454): scheme and host, lower-cased, and the port — the scheme's default
/// when the URL names none. The one comparison of hosts in Conveyor: redirects, credential
/// headers, the authenticator and challenge answers all ask it.
struct Origin: Hashable, Sendable {
    let scheme: String
    let host: String
    let port: Int

    /// The origin of `url`; nil when it has no scheme or host.
    init?(_ url: URL?) {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
    }

    /// The origin a server's challenge comes from; `fallbackScheme` when the space names none.
    init(_ space: URLProtectionSpace, fallbackScheme: String) {
        scheme = space.protocol?.lowercased() ?? fallbackScheme
        host = space.host.lowercased()
        port = space.port
    }

    /// Whether two URLs share an origin; false when either has none.
    static func same(_ lhs: URL?, _ rhs: URL?) -> Bool {
        guard let lhs = Origin(lhs), let rhs = Origin(rhs) else { return false }
        return lhs == rhs
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

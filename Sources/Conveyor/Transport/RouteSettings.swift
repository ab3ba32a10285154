import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How a client reaches its servers besides plain DNS and TCP — a Unix domain socket, address
/// overrides — taken from its configuration once and checked, for the transports to apply.
struct RouteSettings: Sendable {
    /// ``HTTPClient/Configuration/unixSocketPath``.
    let unixSocketPath: String?
    /// ``HTTPClient/Configuration/resolve``, each entry checked.
    let addressOverrides: [HTTPClient.AddressOverride]
    /// ``HTTPClient/Configuration/proxy``.
    let proxy: HTTPClient.Proxy
    /// The first malformed setting, which fails every request.
    let malformed: ConveyorError?

    init(_ configuration: HTTPClient.Configuration) {
        unixSocketPath = configuration.unixSocketPath
        addressOverrides = configuration.resolve
        proxy = configuration.proxy
        if let problem = configuration.proxy.problem {
            malformed = .routeFailed(reason: .invalidProxy(configuration.proxy.description, detail: problem))
        } else if let path = configuration.unixSocketPath, path.isEmpty || path.utf8.contains(0) {
            malformed = .routeFailed(reason: .socketNotFound(path: path))
        } else if let (entry, detail) = configuration.resolve.lazy.compactMap({ entry in entry.problem.map { (entry, $0) } }).first {
            malformed = .routeFailed(reason: .invalidAddressOverride(entry, detail: detail))
        } else {
            malformed = nil
        }
    }

    /// No socket, no overrides.
    static let direct = RouteSettings(HTTPClient.Configuration())

    /// The error every request of a client on `transport` fails with, if any: a malformed
    /// setting, or one the transport cannot honour (the URLSession transport has no way to
    /// connect to a socket or to an address of its choosing).
    func configurationError(for transport: HTTPClient.TransportKind) -> ConveyorError? {
        if let malformed { return malformed }
        guard transport == .urlSession else { return nil }
        if unixSocketPath != nil {
            return .routeFailed(reason: .unsupportedByTransport(feature: "a Unix domain socket", transport: .urlSession))
        }
        if !addressOverrides.isEmpty {
            return .routeFailed(reason: .unsupportedByTransport(feature: "address overrides (resolve)", transport: .urlSession))
        }
        #if canImport(FoundationNetworking)
            // corelibs gives its libcurl handles no proxy options: they use the environment's
            // proxy variables, and nothing else.
            if let server = proxy.server {
                return .routeFailed(
                    reason: .unsupportedByTransport(feature: "a proxy of its own (\(server.kind.rawValue))", transport: .urlSession))
            }
            if proxy.isNone, Self.environmentNamesProxy() {
                return .routeFailed(
                    reason: .unsupportedByTransport(feature: "no proxy while the environment names one", transport: .urlSession))
            }
        #else
            if proxy.server != nil || proxy.isNone {
                return .routeFailed(reason: .unsupportedByTransport(feature: "a proxy other than the system's", transport: .urlSession))
            }
        #endif
        return nil
    }

    /// Whether the environment names a proxy libcurl would use (`http_proxy` is read in lower
    /// case only, as curl does: `HTTP_PROXY` can be set by a CGI request's `Proxy` header).
    static func environmentNamesProxy(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].contains { !(environment[$0] ?? "").isEmpty }
    }

    /// Where a request for `url` connects: the socket (from the configuration or an
    /// `http+unix` URL), checked to exist and be a socket, and the `http(s)` URL to send.
    /// - Returns: The URL to send and the socket path; nil for a TCP request to `url` itself.
    /// - Throws: ``ConveyorError/routeFailed(reason:)`` for a malformed `http+unix` URL or a
    ///   path that is not a socket.
    func socketTarget(for url: URL) throws(ConveyorError) -> (url: URL, socketPath: String)? {
        let target: (url: URL, socketPath: String)
        if let split = try UnixSocketURL.split(url) {
            target = split
        } else if let unixSocketPath {
            target = (url, unixSocketPath)
        } else {
            return nil
        }
        try Self.checkSocket(at: target.socketPath)
        return target
    }

    /// Fails unless a Unix domain socket exists at `path`. Per request: a daemon that starts
    /// after the client was made is found, one that stopped is a typed error, not a refusal
    /// to connect.
    static func checkSocket(at path: String) throws(ConveyorError) {
        var status = stat()
        guard stat(path, &status) == 0 else { throw .routeFailed(reason: .socketNotFound(path: path)) }
        guard status.st_mode & S_IFMT == S_IFSOCK else { throw .routeFailed(reason: .notASocket(path: path)) }
    }
}

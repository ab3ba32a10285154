import Foundation

extension ConveyorError {
    /// Why a client's route to its servers could not be used (``ConveyorError/routeFailed(reason:)``).
    public enum RouteFailureReason: Sendable, Equatable, CustomStringConvertible {
        /// The transport cannot take `feature` (a Unix domain socket, address overrides, a
        /// kind of proxy): the request was refused before anything was sent, rather than sent
        /// some other way than configured. The curl transport (`transport = .curl`, Linux)
        /// takes them all.
        case unsupportedByTransport(feature: String, transport: HTTPClient.TransportKind)
        /// Nothing exists at the Unix domain socket's path (the daemon is not running, or the
        /// path is wrong).
        case socketNotFound(path: String)
        /// Something exists at the path, but it is not a Unix domain socket (a file, a
        /// directory).
        case notASocket(path: String)
        /// An `http+unix` or `https+unix` URL whose host is not a percent-encoded absolute
        /// socket path (`http+unix://%2Fvar%2Frun%2Fdocker.sock/info`).
        case invalidSocketURL(String)
        /// An entry of ``HTTPClient/Configuration/resolve`` is malformed: `detail` says which
        /// part (an address that is not an IPv4 or IPv6 address, a port outside 1...65535, a
        /// host name with a `:` or `,`).
        case invalidAddressOverride(HTTPClient.AddressOverride, detail: String)
        /// The proxy (``HTTPClient/Configuration/proxy``) is malformed: an unknown scheme, no
        /// host, a bad port or a bad entry in its bypass list. The URL is shown without its password.
        case invalidProxy(String, detail: String)
        /// The proxy answered `407 Proxy Authentication Required`: the configured credentials were
        /// refused (`credentialsSent` true: libcurl answered the proxy's challenge once with them),
        /// or none went out (`credentialsSent` false: none configured, or a `407` without a
        /// challenge or with a body over 64 KiB, which ends the request at its head). The
        /// origin's credentials are never offered to a proxy.
        case proxyAuthenticationFailed(proxy: String, credentialsSent: Bool)
        /// The proxy refused or broke off its handshake (a SOCKS5 proxy that rejected the
        /// credentials or the destination, or closed the connection); `detail` is libcurl's text.
        case proxyHandshakeFailed(proxy: String, detail: String)
        /// The client's own proxy could not be reached — refused the connection, its name did
        /// not resolve — so nothing reached the server either: the proxy is down or misnamed,
        /// not the server. `error` is the transport's (`cannotConnectToHost`, `cannotFindHost`);
        /// like it, this is a ``ConveyorError/ConnectivityFailure/notConnected`` failure, which
        /// ``RetryPolicy`` retries by that code.
        case proxyUnreachable(proxy: String, error: URLError)

        /// A readable explanation.
        public var description: String {
            switch self {
            case .unsupportedByTransport(let feature, let transport):
                return "the \(transport.rawValue) transport cannot send over \(feature) (the curl transport can: transport = .curl, Linux)"
            case .socketNotFound(let path): return "no Unix domain socket at \(path)"
            case .notASocket(let path): return "\(path) is not a Unix domain socket"
            case .invalidSocketURL(let url):
                return "\(url) does not name a socket: the host of an http+unix URL is an absolute path, percent-encoded"
            case .invalidAddressOverride(let entry, let detail): return "the address override \(entry) is invalid: \(detail)"
            case .invalidProxy(let proxy, let detail): return "the proxy \(proxy) is invalid: \(detail)"
            case .proxyAuthenticationFailed(let proxy, let sent):
                return sent
                    ? "the proxy \(proxy) refused the configured credentials (407)"
                    : "the proxy \(proxy) requires credentials (407), and none were sent: none are configured "
                        + "(Configuration.proxy.credentials), or its 407 could not be answered (no challenge, or a body over 64 KiB)"
            case .proxyHandshakeFailed(let proxy, let detail): return "the proxy \(proxy) broke off its handshake: \(detail)"
            case .proxyUnreachable(let proxy, let error):
                return "the proxy \(proxy) could not be reached, so the server was not either: \(error.localizedDescription)"
            }
        }
    }
}

import Foundation

/// How long each phase of the network exchange behind a response took, as the transport
/// measured it. Times are seconds from the start of the exchange (the final attempt), so they
/// grow: `domainLookup ≤ connect ≤ secureConnection ≤ firstByte ≤ lastByte`. A reused connection
/// shows its lookup and connect times as 0.
///
/// Reported by the curl transport (from libcurl's `CURLINFO_*_TIME_T`) and by URLSession on
/// Apple platforms (from `URLSessionTaskMetrics`, the last network transaction). corelibs
/// URLSession on Linux never delivers task metrics, so with it ``OperationMetrics/transfer`` is nil.
public struct TransferMetrics: Sendable, Equatable {
    /// Until the host name was resolved.
    public let domainLookup: TimeInterval
    /// Until the TCP connection was established.
    public let connect: TimeInterval
    /// Until the TLS handshake finished; nil for plain HTTP.
    public let secureConnection: TimeInterval?
    /// Until the first byte of the response arrived.
    public let firstByte: TimeInterval
    /// Until the last byte of the response arrived: the final attempt's exchange alone. The
    /// whole operation — every attempt, redirect and back-off, validation and serialization —
    /// is ``OperationMetrics/duration``.
    public let lastByte: TimeInterval
    /// The protocol spoken: `"HTTP/1.1"`, `"HTTP/2"`, `"HTTP/1.0"` or `"HTTP/3"`.
    public let httpVersion: String
    /// Whether an existing connection carried the exchange.
    public let reusedConnection: Bool
    /// The address of the server connected to, if known (through a proxy: the proxy's).
    public let remoteAddress: String?
    /// Whether a proxy carried the exchange. Default ``ProxyRoute/environment`` (not known).
    public let proxy: ProxyRoute

    /// Whether a proxy stood between the client and the server.
    public enum ProxyRoute: Sendable, Equatable, CustomStringConvertible {
        /// Directly to the server: no proxy (``HTTPClient/Proxy/none``, a Unix domain socket).
        case direct
        /// Through the client's own proxy (``HTTPClient/Configuration/proxy``), named as
        /// ``HTTPClient/Proxy/Server/description`` shows it (never its credentials).
        case proxy(String)
        /// Directly, though the client names a proxy: the host is in its
        /// ``HTTPClient/Proxy/bypassedHosts`` (loopback is, by default).
        case bypassed(proxy: String)
        /// The environment's proxies decided (``HTTPClient/Proxy/environment``, the default), and
        /// whether one was used is not reported: libcurl 7.88 does not say, nor corelibs URLSession.
        case environment

        /// `direct`, `via http://proxy:3128`, `direct (bypassed http://proxy:3128)` or
        /// `environment`.
        public var description: String {
            switch self {
            case .direct: return "direct"
            case .proxy(let proxy): return "via \(proxy)"
            case .bypassed(let proxy): return "direct (bypassed \(proxy): the host is in bypassedHosts)"
            case .environment: return "the environment's proxy settings (use not reported)"
            }
        }
    }

    /// Creates metrics (transports, and tests of code that reads them).
    /// - Parameters:
    ///   - domainLookup: Seconds until the host name was resolved.
    ///   - connect: Seconds until the TCP connection was established.
    ///   - secureConnection: Seconds until the TLS handshake finished; nil without TLS.
    ///   - firstByte: Seconds until the first response byte.
    ///   - lastByte: Seconds until the last byte of the response arrived.
    ///   - httpVersion: The protocol spoken.
    ///   - reusedConnection: Whether an existing connection was used.
    ///   - remoteAddress: The server's address.
    ///   - proxy: Whether a proxy carried the exchange; default ``ProxyRoute/environment``.
    public init(
        domainLookup: TimeInterval, connect: TimeInterval, secureConnection: TimeInterval?, firstByte: TimeInterval,
        lastByte: TimeInterval, httpVersion: String, reusedConnection: Bool, remoteAddress: String?, proxy: ProxyRoute = .environment
    ) {
        self.domainLookup = domainLookup
        self.connect = connect
        self.secureConnection = secureConnection
        self.firstByte = firstByte
        self.lastByte = lastByte
        self.httpVersion = httpVersion
        self.reusedConnection = reusedConnection
        self.remoteAddress = remoteAddress
        self.proxy = proxy
    }
}

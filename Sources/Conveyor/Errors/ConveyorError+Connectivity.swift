import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension ConveyorError {
    /// How a failure of connectivity ended an exchange: before a connection existed, or after.
    ///
    /// Decided once, where each transport's error becomes a `URLError` (libcurl's result codes
    /// in the curl transport, corelibs' codes and texts in the URLSession transport), so that
    /// retry policies, the cache's `stale-if-error` and offline fallbacks, and the ``Outbox``
    /// sort the same failure the same way on both transports.
    public enum ConnectivityFailure: Sendable, Equatable, CustomStringConvertible {
        /// No connection was made: refused, no route or network, the name did not resolve. The
        /// request never left, so the server cannot have acted on it.
        case notConnected
        /// The connection ended before a complete response: reset, closed without a reply or
        /// in the middle of the body, or silent past a time limit. The server may have seen
        /// the request.
        case connectionLost

        /// A readable explanation.
        public var description: String {
            switch self {
            case .notConnected: return "no connection could be made"
            case .connectionLost: return "the connection ended before a complete response"
            }
        }
    }

    /// The `URLError` codes that mean "no connection was made" (``ConnectivityFailure/notConnected``).
    public static let notConnectedCodes: Set<URLError.Code> = [
        .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet, .internationalRoamingOff, .callIsActive,
        .dataNotAllowed,
    ]

    /// The `URLError` codes that mean "the connection ended early" (``ConnectivityFailure/connectionLost``).
    public static let connectionLostCodes: Set<URLError.Code> = [.networkConnectionLost, .timedOut]

    /// Every `URLError` code of a connectivity failure: ``notConnectedCodes`` and
    /// ``connectionLostCodes``. ``RetryPolicy``'s default retryable codes.
    public static let connectivityFailureCodes: Set<URLError.Code> = notConnectedCodes.union(connectionLostCodes)

    /// Whether the failure is one of connectivity rather than of HTTP, TLS or the caller: see
    /// ``connectivityFailure``.
    public var isConnectivityFailure: Bool { connectivityFailure != nil }

    /// How connectivity failed, or nil when the failure is not one of connectivity.
    ///
    /// Connection refused, no route, a name that does not resolve and no network are
    /// ``ConnectivityFailure/notConnected`` (an unreachable proxy,
    /// ``RouteFailureReason/proxyUnreachable(proxy:error:)``, too); a reset, a connection closed without a reply
    /// ("empty reply from server") or mid-body, a transport timeout and the idle timeout
    /// (``TimeoutKind/idle``) are ``ConnectivityFailure/connectionLost``. A malformed answer,
    /// a TLS failure, an HTTP status, the resource timeout (the transfer was moving) and a
    /// cancellation are not connectivity failures.
    public var connectivityFailure: ConnectivityFailure? {
        switch self {
        case .network(let error): return Self.connectivityFailure(code: error.code)
        case .routeFailed(.proxyUnreachable(_, let error)): return Self.connectivityFailure(code: error.code)
        case .timedOut(.idle, _): return .connectionLost
        default: return nil
        }
    }

    /// The classification of a transport's error as a transport delegate receives it (a
    /// `URLError`, already mapped by the transport, or a ``ConveyorError``).
    static func connectivityFailure(of error: any Error) -> ConnectivityFailure? {
        if let error = error as? ConveyorError { return error.connectivityFailure }
        if let error = error as? URLError { return connectivityFailure(code: error.code) }
        return nil
    }

    private static func connectivityFailure(code: URLError.Code) -> ConnectivityFailure? {
        if notConnectedCodes.contains(code) { return .notConnected }
        if connectionLostCodes.contains(code) { return .connectionLost }
        return nil
    }
}

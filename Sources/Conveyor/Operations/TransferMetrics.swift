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
    /// The address of the server connected to, if known.
    public let remoteAddress: String?

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
    public init(
        domainLookup: TimeInterval, connect: TimeInterval, secureConnection: TimeInterval?, firstByte: TimeInterval,
        lastByte: TimeInterval, httpVersion: String, reusedConnection: Bool, remoteAddress: String?
    ) {
        self.domainLookup = domainLookup
        self.connect = connect
        self.secureConnection = secureConnection
        self.firstByte = firstByte
        self.lastByte = lastByte
        self.httpVersion = httpVersion
        self.reusedConnection = reusedConnection
        self.remoteAddress = remoteAddress
    }
}

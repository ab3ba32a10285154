import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The moments URLSession reports for one transaction (`URLSessionTaskTransactionMetrics`),
/// turned into ``TransferMetrics`` the way the curl transport reports them: seconds from the
/// start of the exchange, in order, 0 for the phases a reused connection skipped.
///
/// Apple's URLSession delivers task metrics before the task completes; corelibs URLSession on
/// Linux declares the types but never calls `urlSession(_:task:didFinishCollecting:)`
/// (measured with corelibs of Swift 6.3), so there ``OperationMetrics/transfer`` stays nil.
struct URLSessionTransactionTimeline: Equatable {
    var fetchStart: Date?
    var domainLookupEnd: Date?
    var connectEnd: Date?
    var secureConnectionStart: Date?
    var secureConnectionEnd: Date?
    var responseStart: Date?
    var responseEnd: Date?
    /// ALPN's name: `http/1.1`, `h2`, `h3`, `http/1.0`.
    var networkProtocolName: String?
    var isReusedConnection: Bool
    var remoteAddress: String?

    /// The timeline of the last network transaction of a task (the final attempt; redirects
    /// are never followed by URLSession here), nil when none came from the network.
    init?(_ metrics: URLSessionTaskMetrics) {
        guard let transaction = metrics.transactionMetrics.last(where: { $0.resourceFetchType == .networkLoad }) else { return nil }
        self.init(
            fetchStart: transaction.fetchStartDate, domainLookupEnd: transaction.domainLookupEndDate,
            connectEnd: transaction.connectEndDate, secureConnectionStart: transaction.secureConnectionStartDate,
            secureConnectionEnd: transaction.secureConnectionEndDate, responseStart: transaction.responseStartDate,
            responseEnd: transaction.responseEndDate, networkProtocolName: transaction.networkProtocolName,
            isReusedConnection: transaction.isReusedConnection, remoteAddress: transaction.remoteAddress)
    }

    init(
        fetchStart: Date?, domainLookupEnd: Date?, connectEnd: Date?, secureConnectionStart: Date?, secureConnectionEnd: Date?,
        responseStart: Date?, responseEnd: Date?, networkProtocolName: String?, isReusedConnection: Bool, remoteAddress: String?
    ) {
        self.fetchStart = fetchStart
        self.domainLookupEnd = domainLookupEnd
        self.connectEnd = connectEnd
        self.secureConnectionStart = secureConnectionStart
        self.secureConnectionEnd = secureConnectionEnd
        self.responseStart = responseStart
        self.responseEnd = responseEnd
        self.networkProtocolName = networkProtocolName
        self.isReusedConnection = isReusedConnection
        self.remoteAddress = remoteAddress
    }

    /// The metrics, nil without a start or a response end (a transaction that did not finish).
    var transferMetrics: TransferMetrics? {
        guard let fetchStart, let responseEnd else { return nil }
        // Each phase ends no earlier than the one before; a missing or earlier date (a phase
        // skipped, a clock step) takes the previous phase's time.
        func offset(_ date: Date?, after previous: TimeInterval) -> TimeInterval {
            guard let date else { return previous }
            return max(previous, date.timeIntervalSince(fetchStart))
        }
        let reused = isReusedConnection
        let lookup = reused ? 0 : offset(domainLookupEnd, after: 0)
        let connect = reused ? 0 : offset(connectEnd, after: lookup)
        let secure = secureConnectionStart != nil || secureConnectionEnd != nil
        let handshake = secure ? (reused ? 0 : offset(secureConnectionEnd, after: connect)) : nil
        let firstByte = offset(responseStart, after: handshake ?? connect)
        return TransferMetrics(
            domainLookup: lookup, connect: connect, secureConnection: handshake, firstByte: firstByte,
            lastByte: offset(responseEnd, after: firstByte), httpVersion: Self.httpVersion(networkProtocolName),
            reusedConnection: reused, remoteAddress: remoteAddress)
    }

    /// `HTTP/1.1`, `HTTP/2`, `HTTP/3` or `HTTP/1.0` from ALPN's name; HTTP/1.1 when unknown.
    static func httpVersion(_ protocolName: String?) -> String {
        switch protocolName?.lowercased() {
        case "h2", "h2c": "HTTP/2"
        case "h3": "HTTP/3"
        case "http/1.0": "HTTP/1.0"
        default: "HTTP/1.1"
        }
    }
}

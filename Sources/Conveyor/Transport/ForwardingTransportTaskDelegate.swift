import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A delegate that stands in front of another (``wrapped``) and passes on every callback it
/// does not handle itself: connection admission, the pinning of stamped secrets, the reader of
/// a body file. The forwarding lives here once, so a callback added to
/// ``TransportTaskDelegate`` reaches the operation through every wrapper (a wrapper that did
/// not forward `transportWantsPause` would silently turn off backpressure).
protocol ForwardingTransportTaskDelegate: TransportTaskDelegate {
    /// The delegate every callback goes on to.
    var wrapped: any TransportTaskDelegate { get }
}

extension ForwardingTransportTaskDelegate {
    func transportDidReceive(response: HTTPResponseHead) { wrapped.transportDidReceive(response: response) }
    func transportDidReceive(data: Data) { wrapped.transportDidReceive(data: data) }
    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        wrapped.transportDidSend(bytes: bytes, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
    }
    func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        wrapped.transportDisposition(for: challenge)
    }
    func transportDidCollect(metrics: TransferMetrics) { wrapped.transportDidCollect(metrics: metrics) }
    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        wrapped.transportDidComplete(response: response, error: error)
    }
    var transportWantsPause: Bool { wrapped.transportWantsPause }
    func transportAwaitsConnection() { wrapped.transportAwaitsConnection() }
    func transportDidLeaveConnectionQueue() { wrapped.transportDidLeaveConnectionQueue() }
}

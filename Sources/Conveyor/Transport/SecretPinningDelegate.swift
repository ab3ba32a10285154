import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Holds credential values a transport (or the cache) added to a request — the stored
/// cookies it stamped — pinned in ``SentSecrets`` for as long as the exchange runs, and passes
/// every event on unchanged. Made only when there is something to hold.
final class SecretPinningDelegate: TransportTaskDelegate {
    // Sendable: `pinned` is behind one Lock; `wrapped` is Sendable.
    let wrapped: any TransportTaskDelegate
    private let pinned: Lock<[String]>

    /// Pins `values` (the caller checked they are not empty) until the exchange completes.
    init(_ wrapped: any TransportTaskDelegate, pinning values: [String]) {
        self.wrapped = wrapped
        SentSecrets.shared.pin(values)
        pinned = Lock(values)
    }

    /// Backstop: an exchange that never reported its completion lets go here.
    deinit { SentSecrets.shared.unpin(pinned.withLock { $0 }) }

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
        // The operation finishing on this call logs its response while the values are held.
        wrapped.transportDidComplete(response: response, error: error)
        let values = pinned.withLock { values in
            defer { values = [] }
            return values
        }
        SentSecrets.shared.unpin(values)
    }
    var transportWantsPause: Bool { wrapped.transportWantsPause }
    func transportAwaitsConnection() { wrapped.transportAwaitsConnection() }
    func transportDidLeaveConnectionQueue() { wrapped.transportDidLeaveConnectionQueue() }
}

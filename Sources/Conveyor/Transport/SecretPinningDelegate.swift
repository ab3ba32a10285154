import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Holds credential values a transport (or the cache) added to a request — the stored
/// cookies it stamped — pinned in ``SentSecrets`` for as long as the exchange runs, and passes
/// every event on unchanged. Made only when there is something to hold.
final class SecretPinningDelegate: ForwardingTransportTaskDelegate {
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

    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        // The operation finishing on this call logs its response while the values are held.
        wrapped.transportDidComplete(response: response, error: error)
        let values = pinned.withLock { values in
            defer { values = [] }
            return values
        }
        SentSecrets.shared.unpin(values)
    }
}

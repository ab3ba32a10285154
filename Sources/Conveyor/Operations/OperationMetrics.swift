import Foundation

/// Timing and size facts an operation measured itself (URLSession on Linux never delivers
/// `URLSessionTaskMetrics`).
public struct OperationMetrics: Sendable, Equatable {
    /// When the operation started.
    public let startDate: Date
    /// Seconds from start to finish of the whole operation: every attempt, redirect and retry
    /// back-off, validation and serialization. The final attempt's network exchange alone is
    /// ``TransferMetrics/lastByte`` in ``transfer``.
    public let duration: TimeInterval
    /// Seconds from start to the first response head; nil when none arrived.
    public let timeToFirstResponse: TimeInterval?
    /// Body bytes received for the final response.
    public let bytesReceived: Int
    /// Request body bytes sent, all attempts together.
    public let bytesSent: Int64
    /// Redirects followed.
    public let redirectCount: Int
    /// Attempts made, retries included (1 without retries).
    public let attemptCount: Int
    /// Where the final response came from: the network, or ``HTTPCache`` (directly or
    /// after a `304 Not Modified`).
    public let responseSource: HTTPCache.ResponseSource
    /// The phases of the final attempt's exchange (DNS, connect, TLS, first byte, last byte) as
    /// the transport measured them; nil when the transport reports none (URLSession on
    /// Linux) or no exchange took place (an answer from the cache).
    public let transfer: TransferMetrics?

    init(record state: TransferRecord, now: DispatchTime) {
        let start = state.startTime ?? now
        func seconds(_ end: DispatchTime) -> TimeInterval {
            Double(end.uptimeNanoseconds &- start.uptimeNanoseconds) / 1e9
        }
        startDate = state.startDate ?? Date()
        duration = seconds(now)
        timeToFirstResponse = state.firstByteTime.map(seconds)
        bytesReceived = Int(state.bytesReceived)
        bytesSent = state.bytesSent
        redirectCount = state.redirectCount
        attemptCount = state.retryCount + 1
        responseSource = state.responseSource
        transfer = state.responseSource == .cache ? nil : state.transferMetrics
    }
}

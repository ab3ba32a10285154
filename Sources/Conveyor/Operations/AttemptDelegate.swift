import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The transport delegate of one attempt: events of a task the operation no longer waits for
/// (paused, cancelled, superseded by a retry) are dropped by attempt number.
final class AttemptDelegate: TransportTaskDelegate {
    let operation: HTTPRequestOperation
    let attempt: Int
    /// Whether the request as sent carried `Range` (the caller's, or a continuation's): only
    /// then is a 206 an answer to it.
    let asksForRange: Bool

    init(operation: HTTPRequestOperation, attempt: Int, asksForRange: Bool) {
        self.operation = operation
        self.attempt = attempt
        self.asksForRange = asksForRange
    }

    func transportDidReceive(response: HTTPResponseHead) {
        operation.attemptDidReceive(response: response, attempt: attempt, asksForRange: asksForRange)
    }
    func transportDidReceive(data: Data) { operation.attemptDidReceive(data: data, attempt: attempt) }
    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        operation.attemptDidSend(bytes: bytes, total: totalBytesSent, expected: totalBytesExpectedToSend, attempt: attempt)
    }
    func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        operation.disposition(for: challenge)
    }
    func transportDidCollect(metrics: TransferMetrics) {
        operation.transfer { $0.collected(metrics, attempt: attempt) }
    }
    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        operation.attemptDidComplete(response: response, error: error, attempt: attempt)
    }
    func transportAwaitsConnection() {
        let monitors = operation.transferReporting { $0.awaitsConnection(attempt: attempt) }
        monitors?.post(operation) { [operation] in $0.requestIsWaitingForConnection(operation) }
    }
    func transportDidLeaveConnectionQueue() {
        // The idle time starts now: the queue was not the transfer's silence.
        let monitors = operation.transferReporting { $0.leftConnectionQueue(attempt: attempt, now: .now()) }
        monitors?.post(operation) { [operation] in $0.requestGotConnection(operation) }
    }
    var transportWantsPause: Bool {
        // The transfer pauses itself now; `send` resumes it if the consumer caught up meanwhile.
        operation.transfer { $0.transportWantsPause(attempt: attempt) }
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The transport delegate of one attempt: events of a task the operation no longer waits for
/// (paused, cancelled, superseded by a retry) are dropped by attempt number. Transports call it
/// on their executor (checked in debug builds), where the operation's other events run too.
final class AttemptDelegate: TransportTaskDelegate {
    let operation: HTTPRequestOperation
    let attempt: Int
    /// Whether the request as sent carried `Range` (the caller's, or a continuation's): only
    /// then is a 206 an answer to it.
    let asksForRange: Bool
    /// The settings of the run the attempt belongs to: its events read them without a lock.
    let settings: ResolvedSettings
    /// The transport's executor, which every callback must come from.
    let executor: any TransferExecutor

    init(operation: HTTPRequestOperation, attempt: Int, asksForRange: Bool, settings: ResolvedSettings) {
        self.operation = operation
        self.attempt = attempt
        self.asksForRange = asksForRange
        self.settings = settings
        executor = settings.transport.executor
    }

    func transportDidReceive(response: HTTPResponseHead) {
        executor.assertCurrent()
        operation.attemptDidReceive(response: response, attempt: attempt, asksForRange: asksForRange, settings: settings)
    }
    func transportDidReceive(data: Data) {
        executor.assertCurrent()
        operation.attemptDidReceive(data: data, attempt: attempt, settings: settings)
    }
    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        executor.assertCurrent()
        operation.attemptDidSend(
            bytes: bytes, total: totalBytesSent, expected: totalBytesExpectedToSend, attempt: attempt, settings: settings)
    }
    func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        executor.assertCurrent()
        return operation.disposition(for: challenge, settings: settings)
    }
    func transportDidCollect(metrics: TransferMetrics) {
        executor.assertCurrent()
        operation.transfer { $0.collected(metrics, attempt: attempt) }
    }
    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        executor.assertCurrent()
        operation.attemptDidComplete(response: response, error: error, attempt: attempt, settings: settings)
    }
    func transportAwaitsConnection() {
        executor.assertCurrent()
        operation.transfer { $0.awaitsConnection(attempt: attempt) }
        settings.hooks?.monitors?.post(operation) { [operation] in $0.requestIsWaitingForConnection(operation) }
    }
    func transportDidLeaveConnectionQueue() {
        executor.assertCurrent()
        // The idle time starts now: the queue was not the transfer's silence.
        operation.transfer { $0.leftConnectionQueue(attempt: attempt, now: .now()) }
        settings.hooks?.monitors?.post(operation) { [operation] in $0.requestGotConnection(operation) }
    }
    var transportWantsPause: Bool {
        executor.assertCurrent()
        // The transfer pauses itself now; `send` resumes it if the consumer caught up meanwhile.
        return operation.transfer { $0.transportWantsPause(attempt: attempt) }
    }
}

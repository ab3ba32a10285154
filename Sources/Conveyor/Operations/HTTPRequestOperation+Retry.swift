import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Notification.Name {
    /// Posted when an ``HTTPRequestOperation`` is about to send another attempt after a failure;
    /// `object` is the operation, `userInfo["attempt"]` the coming attempt's number (2 for the
    /// first retry) and `userInfo["error"]` the ``ConveyorError`` that caused it.
    public static let conveyorOperationWillRetry = Notification.Name("org.conveyor.operation.willRetry")
}

extension HTTPRequestOperation {
    /// Fails the current attempt: retries when the policy allows, finishes otherwise.
    func fail(_ error: ConveyorError, response: HTTPResponseHead?, retryable: Bool) {
        assertOnExecutor()
        let failed = mutableState.withLock { state -> (ResolvedSettings, RetryPolicy.Context, TransferStateMachine.Halt, Bool)? in
            let settings = state.settings
            let policy = settings.retryPolicy
            guard
                case .askRetryPolicy(let count, let halt) = state.transfer.attemptFailed(
                    retryable: retryable, cancelled: error.isCancelled, maximumAttempts: policy.maximumAttempts)
            else { return nil }
            // Built only here: the context makes the Foundation response, which a failure that
            // is not retried never needs.
            let context = RetryPolicy.Context(
                request: state.transfer.currentRequest, response: response?.urlResponse, error: error, attemptCount: count)
            // The caller's body stream this request carries was read by the attempt that failed:
            // sending the request again would fail with `requestBodyStreamExhausted` and hide
            // this error, so a retry of the same request is not made (one with a new request is).
            return (settings, context, halt, state.transfer.currentBodyStreamIsSpent)
        }
        guard let (settings, context, halt, bodySpent) = failed, !isCancelled else {
            finish(.failure(error))
            return
        }
        halt.timers.forEach { $0.cancel() }
        halt.task?.cancel()
        let policy = settings.retryPolicy
        let decided: @Sendable (RetryPolicy.Decision) -> Void = { [self] decision in
            switch decision {
            case .doNotRetry:
                finish(.failure(error))
            case .useDefault:
                if !bodySpent, let delay = policy.defaultDelay(for: context) {
                    scheduleRetry(after: delay, request: nil, error: error, monitors: settings.hooks?.monitors)
                } else {
                    finish(.failure(error))
                }
            case .retry(_, nil) where bodySpent:
                finish(.failure(error))
            case .retry(let delay, let request):
                scheduleRetry(
                    after: delay ?? policy.backoff(afterAttempt: context.attemptCount), request: request, error: error,
                    monitors: settings.hooks?.monitors)
            }
        }
        // The caller's `decide` answers from any thread, perhaps much later: its answer is an
        // event of the transfer like any other.
        if let decide = policy.decide {
            decide(context) { [self] decision in onExecutor { decided(decision) } }
        } else {
            decided(.useDefault)
        }
    }

    private func scheduleRetry(after delay: TimeInterval, request: URLRequest?, error: ConveyorError, monitors: EventMonitorDispatcher?) {
        guard case .backOff(let attemptNumber, let file) = transfer({ $0.retryScheduled(request: request) }) else { return }
        // A download cut off mid-body continues with Range where the server can resume it.
        closeKeptBytes(file)
        NotificationCenter.default.post(
            name: .conveyorOperationWillRetry, object: self, userInfo: ["attempt": attemptNumber, "error": error])
        monitors?.post(self) { $0.request(self, willRetry: attemptNumber, after: max(0, delay), because: error) }
        let timer = makeTimer(after: max(0, delay)) { [weak self] in
            guard let self else { return }
            self.onExecutor {
                guard
                    let (next, timeouts) = self.mutableState.withLock({ state -> (URLRequest, ResolvedSettings.Timeouts)? in
                        guard case .send(let next) = state.transfer.retryTimerFired() else { return nil }
                        return (next, state.settings.timeouts)
                    })
                else { return }
                // The next attempt gets fresh idle and resource budgets.
                self.armTimers(timeouts)
                self.send(next)
            }
        }
        if !transfer({ $0.retryTimerArmed(timer) }) { timer.cancel() }
    }

    /// Retries made so far (0 while the first attempt runs).
    public var retryCount: Int { transfer { $0.retryCount } }
}

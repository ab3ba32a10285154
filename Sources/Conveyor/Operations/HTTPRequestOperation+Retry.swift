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
        let context = mutableState.withLock { state -> (RetryPolicy, RetryPolicy.Context, [DeadlineTimer])? in
            guard retryable, !state.completionClaimed, state.state == .executing, !error.isCancelled else { return nil }
            // Checked first: the context builds the Foundation response, which a failure that is
            // not retried never needs.
            guard state.retryCount + 1 < state.retryPolicy.maximumAttempts else { return nil }
            let context = RetryPolicy.Context(
                request: state.currentRequest, response: response?.urlResponse, error: error, attemptCount: state.retryCount + 1)
            // Stop listening to the failed task while the decision is made, and stop the clocks:
            // a decision may wait for a person ("Retry?"), which is no part of any attempt.
            state.attempt += 1
            state.task = nil
            return (state.retryPolicy, context, state.takeTimers())
        }
        guard let (policy, context, timers) = context, !isCancelled else {
            finish(.failure(error))
            return
        }
        timers.forEach { $0.cancel() }
        let decided: @Sendable (RetryPolicy.Decision) -> Void = { [self] decision in
            switch decision {
            case .doNotRetry:
                finish(.failure(error))
            case .useDefault:
                if let delay = policy.defaultDelay(for: context) {
                    scheduleRetry(after: delay, request: nil, error: error)
                } else {
                    finish(.failure(error))
                }
            case .retry(let delay, let request):
                scheduleRetry(after: delay ?? policy.backoff(afterAttempt: context.attemptCount), request: request, error: error)
            }
        }
        if let decide = policy.decide { decide(context, decided) } else { decided(.useDefault) }
    }

    private func scheduleRetry(after delay: TimeInterval, request: URLRequest?, error: ConveyorError) {
        let attemptNumber = mutableState.withLock { state -> Int? in
            guard !state.completionClaimed, state.state == .executing else { return nil }
            state.retryCount += 1
            if let request { state.currentRequest = request }
            // A download cut off mid-body continues with Range where the server can resume it.
            if let response = state.response, response.statusCode == 200 || response.statusCode == 206,
                state.bytesReceived > 0, let validator = Self.validator(of: response), state.currentRequest.httpMethod ?? "GET" == "GET"
            {
                state.resumeOffset = state.bytesReceived
                state.resumeValidator = validator
                if let file = state.bodyFile, (try? file.close()) == nil {
                    // Not all kept bytes reached the file: start over rather than resume a gap.
                    state.resumeOffset = 0
                    state.resumeValidator = nil
                }
            } else {
                state.resumeOffset = 0
                state.resumeValidator = nil
            }
            return state.retryCount + 1
        }
        guard let attemptNumber else { return }
        NotificationCenter.default.post(
            name: .conveyorOperationWillRetry, object: self, userInfo: ["attempt": attemptNumber, "error": error])
        let timer = makeTimer(after: max(0, delay)) { [weak self] in
            guard let self else { return }
            self.mutableState.withLock { $0.retryTimer = nil }
            // The next attempt gets fresh idle and resource budgets.
            self.armTimers()
            self.send(self.mutableState.withLock { $0.currentRequest })
        }
        mutableState.withLock { $0.retryTimer = timer }
    }

    /// Retries made so far (0 while the first attempt runs).
    public var retryCount: Int { mutableState.withLock { $0.retryCount } }
}

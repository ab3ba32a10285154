import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// Runs `start()`: the queue calls it once.
    func beginExecution() {
        let proceed = mutableState.withLock { state -> Bool in
            guard !state.started else { return false }
            state.started = true
            // Paused before the queue got to it: `resume()` starts it.
            return state.state == .ready
        }
        guard proceed else { return }
        if isCancelled {
            finish(.failure(.cancelled(reason: cancellationReason)))
            return
        }
        if let error = mutableState.withLock({ $0.preflightError }) {
            finish(.failure(error))
            return
        }
        mutableState.withLock {
            $0.startDate = Date()
            $0.startTime = .now()
        }
        guard transition(from: [.ready], to: .executing) else { return }
        NotificationCenter.default.post(name: .conveyorOperationDidStart, object: self)
        beginBackgroundTaskIfRequested()
        armTimers()
        send(mutableState.withLock { $0.currentRequest })
    }

    /// Makes the operation fail with `error` as soon as it starts, without network traffic: a
    /// request that could not be built still gets an operation and one error path.
    func failWhenStarted(with error: any Error) {
        let error = error as? ConveyorError ?? .parameterEncodingFailed(reason: .encoderFailed(error))
        mutableState.withLock { $0.preflightError = error }
    }

    /// Runs `cancel()` after `Operation` recorded it.
    func finishIfCancelledWhileExecuting() {
        // A ready operation finishes when its queue starts it (a cancelled operation is ready
        // at once); an executing one — or a paused one its queue has started — finishes now,
        // so the caller is never kept waiting on the transport. A paused operation the queue
        // has not started goes back to ready: telling the queue "finished" about an operation
        // it has not started corrupts corelibs' OperationQueue (a crash in `_schedule()`).
        let (state, started) = mutableState.withLock { ($0.state, $0.started) }
        if state == .executing || (state == .paused && started) {
            finish(.failure(.cancelled(reason: cancellationReason)))
        } else if state == .paused {
            transition(from: [.paused], to: .ready)
            // The queue may have started it meanwhile, finding it paused: finish it here then.
            if mutableState.withLock({ $0.started }) { finish(.failure(.cancelled(reason: cancellationReason))) }
        }
    }

    /// Stops the transfer and keeps what arrived, so ``resume()`` continues it.
    ///
    /// A download whose response carried an `ETag` or `Last-Modified` resumes with `Range` and
    /// `If-Range`: the bytes already received are kept when the server answers 206 with a
    /// `Content-Range` that starts where they end (same total, same validator), and dropped
    /// when it answers 200 (the resource changed); any other 206, or a 416, sends the whole
    /// request again without `Range`. Other operations start over. No finish notification is posted: the operation has not ended.
    /// Does nothing once finished or cancelled.
    public func pause() {
        let stopped = mutableState.withLock { state -> (task: (any TransportTask)?, timers: [DeadlineTimer], file: ResponseBodyFile?)? in
            guard !state.completionClaimed, state.state == .ready || state.state == .executing else { return nil }
            guard state.state == .executing else { return (nil, [], nil) }
            state.attempt += 1
            let validator = state.response.flatMap(Self.validator(of:))
            let resumable = state.response.map { $0.statusCode == 200 || $0.statusCode == 206 } ?? false
            if resumable, let validator, state.currentRequest.httpMethod ?? "GET" == "GET", state.bytesReceived > 0 {
                state.resumeOffset = state.bytesReceived
                state.resumeValidator = validator
            } else {
                state.resumeOffset = 0
                state.resumeValidator = nil
            }
            defer { state.task = nil }
            return (state.task, state.takeTimers(), state.bodyFile)
        }
        guard let stopped, !isCancelled else { return }
        stopped.timers.forEach { $0.cancel() }
        stopped.task?.cancel()
        do {
            try stopped.file?.close()
        } catch {
            // The kept bytes did not all reach the file: start over rather than resume a gap.
            mutableState.withLock {
                $0.resumeOffset = 0
                $0.resumeValidator = nil
            }
        }
        transition(from: [.ready, .executing], to: .paused)
    }

    /// Continues a paused operation; see ``pause()``. Does nothing unless paused.
    public func resume() {
        guard transition(from: [.paused], to: .ready) else { return }
        // Paused before its queue started it: the queue will.
        guard mutableState.withLock({ $0.started }) else { return }
        guard transition(from: [.ready], to: .executing) else { return }
        armTimers()
        send(mutableState.withLock { $0.currentRequest })
    }

    /// Why the operation was cancelled (`.explicit` unless a client drained it).
    var cancellationReason: ConveyorError.CancellationReason {
        mutableState.withLock { $0.cancellationReason } ?? .explicit
    }

    /// Whether the operation has been started by its queue (or by `start()`).
    var hasStarted: Bool { mutableState.withLock { $0.started } }

    /// Whether the operation is paused.
    public var isPaused: Bool { mutableState.withLock { $0.state == .paused } }

    /// `ETag` if strong, else `Last-Modified`: the validators `If-Range` accepts (RFC 9110 §13.1.5).
    static func validator(of response: HTTPResponseHead) -> String? {
        if let etag = response.value(forHTTPHeaderField: "ETag"), !etag.hasPrefix("W/") { return etag }
        return response.value(forHTTPHeaderField: "Last-Modified")
    }

    // MARK: - Timers

    /// Arms the idle timer and, if configured, the resource timer (again after a resume).
    func armTimers() {
        let (idle, resource) = mutableState.withLock { ($0.idleTimeout, $0.resourceTimeout) }
        if idle > 0, idle.isFinite {
            let timer = makeTimer(after: idle) { [weak self] in self?.idleTimerFired(interval: idle) }
            mutableState.withLock {
                $0.idleTimer = timer
                $0.lastActivity = .now()
            }
        }
        if let resource, resource > 0, resource.isFinite {
            // A timeout is a failure like any other: the retry policy (and its `decide`) sees it.
            let timer = makeTimer(after: resource) { [weak self] in
                self?.fail(.timedOut(.resource, after: resource), response: nil, retryable: true)
            }
            mutableState.withLock { $0.resourceTimer = timer }
        }
    }

    func makeTimer(after seconds: TimeInterval, handler: @escaping @Sendable () -> Void) -> DeadlineTimer {
        DeadlineScheduler.shared.schedule(after: seconds, handler: handler)
    }

    /// Idle means no byte moved for `interval`. Rather than rescheduling on every chunk, the
    /// timer wakes at the earliest possible deadline and re-arms from the last activity.
    private func idleTimerFired(interval: TimeInterval) {
        let (timer, remaining, waiting) = mutableState.withLock { state in
            let idle = Double(DispatchTime.now().uptimeNanoseconds - state.lastActivity.uptimeNanoseconds) / 1e9
            return (state.idleTimer, interval - idle, state.task == nil || state.awaitsConnection)
        }
        guard let timer else { return }
        // Waiting between attempts (a retry's backoff) is not idleness of the transfer, nor is
        // waiting for a connection while the origin's connections serve other requests: those
        // have idle timers of their own, so the queue moves or they fail and free their slot.
        if remaining > 0.001 || waiting {
            timer.schedule(after: max(remaining, interval / 4))
        } else {
            fail(.timedOut(.idle, after: interval), response: nil, retryable: true)
        }
    }
}

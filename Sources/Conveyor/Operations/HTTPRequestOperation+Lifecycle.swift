import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// Runs `start()`: the queue calls it once.
    func beginExecution() {
        // Read before the lock: `Operation` guards `isCancelled` with a lock of its own, and the
        // operation's lock is never held while taking another.
        let cancelled = isCancelled
        // The settings are resolved in the lock that starts the run: every event after it reads them.
        let (action, settings, current) = mutableState.withLock {
            state -> (TransferStateMachine.StartAction, ResolvedSettings?, URLRequest) in
            let action = state.transfer.start(isCancelled: cancelled, now: .now(), date: Date())
            if case .none = action { return (action, nil, state.transfer.currentRequest) }
            state.resolveSettings(for: request)
            return (action, state.settings, state.transfer.currentRequest)
        }
        switch action {
        case .none: return
        case .finish(let error): onExecutor { self.finish(.failure(error)) }
        case .execute:
            // The queue sees the operation execute at once; its transfer begins on the executor.
            guard let settings, transition(from: [.ready], to: .executing) else { return }
            settings.transport.executor.run {
                self.announceStart(settings)
                self.armTimers(settings.timeouts)
                self.send(current)
            }
        }
    }

    /// Tells the world the operation runs (once: by its start, or by the resume of one paused
    /// before its queue started it — that one was not announced; found by the independent attack).
    private func announceStart(_ settings: ResolvedSettings) {
        NotificationCenter.default.post(name: .conveyorOperationDidStart, object: self)
        settings.hooks?.monitors?.post(self) { [request] in $0.requestDidStart(self, request: request) }
        beginBackgroundTaskIfRequested()
    }

    /// Makes the operation fail with `error` as soon as it starts, without network traffic: a
    /// request that could not be built still gets an operation and one error path.
    func failWhenStarted(with error: any Error) {
        let error = error as? ConveyorError ?? .parameterEncodingFailed(reason: .encoderFailed(error))
        transfer { $0.preflightFailed(error) }
    }

    /// Runs `cancel()` after `Operation` recorded it, on the transfer's executor (in its urgent
    /// lane, before body chunks already queued): the caller is never kept waiting on the
    /// transport (see ``TransferStateMachine/cancelled()``).
    func finishIfCancelledWhileExecuting() {
        onExecutor(urgent: true) { self.cancelledOnExecutor() }
    }

    private func cancelledOnExecutor() {
        switch transfer({ $0.cancelled() }) {
        case .none: return
        case .finish: finish(.failure(.cancelled(reason: cancellationReason)))
        case .returnToReady:
            transition(from: [.paused], to: .ready)
            // The queue may have started it meanwhile, finding it paused: finish it here then.
            if hasStarted { finish(.failure(.cancelled(reason: cancellationReason))) }
        }
    }

    /// Stops the transfer and keeps what arrived, so ``resume()`` continues it.
    ///
    /// A download whose response carried an `ETag` or `Last-Modified` resumes with `Range` and
    /// `If-Range`: the bytes already received are kept when the server answers 206 with a
    /// `Content-Range` that starts where they end (same total, to its end, same validator), and dropped
    /// when it answers 200 (the resource changed); any other 206, or a 416, sends the whole
    /// request again without `Range`. Other operations start over. No finish notification is posted: the operation has not ended.
    /// Does nothing once finished or cancelled.
    public func pause() {
        switch transfer({ $0.pause() }) {
        case .none: return
        case .pauseWaiting: break
        case .stop(let halt):
            // At once, not on the executor: `resumeState` read right after `pause()` (and
            // saved before the program exits) counts on the kept bytes being on disk. The
            // attempt is over for the machine already, and the file has a lock of its own.
            halt.timers.forEach { $0.cancel() }
            halt.task?.cancel()
            closeKeptBytes(halt.file)
        }
        if !isCancelled { transition(from: [.ready, .executing], to: .paused) }
    }

    /// Flushes and closes the body file whose bytes a ranged request continues; if they did not
    /// all reach it, the next attempt starts over rather than resume a gap.
    func closeKeptBytes(_ file: ResponseBodyFile?) {
        guard let file else { return }
        do { try file.close() } catch { transfer { $0.keptBytesLost() } }
    }

    /// Continues a paused operation; see ``pause()``. Does nothing unless paused.
    public func resume() {
        guard transition(from: [.paused], to: .ready) else { return }
        // Paused before its queue started it: the queue will.
        guard hasStarted, transition(from: [.ready], to: .executing) else { return }
        // A resume begins a run: settings assigned while paused (or while running before) apply from here.
        let (first, settings, current) = mutableState.withLock { state in
            state.resolveSettings(for: request)
            return (state.transfer.firstRun(now: .now(), date: Date()), state.settings, state.transfer.currentRequest)
        }
        settings.transport.executor.run {
            if first { self.announceStart(settings) }
            self.armTimers(settings.timeouts)
            self.send(current)
        }
    }

    /// Why the operation was cancelled (`.explicit` unless a client drained it).
    var cancellationReason: ConveyorError.CancellationReason {
        transfer { $0.cancellationReason } ?? .explicit
    }

    /// Whether the operation has been started by its queue (or by `start()`).
    var hasStarted: Bool { transfer { $0.hasStarted } }

    /// Whether the operation is paused.
    public var isPaused: Bool { state == .paused }

    // MARK: - Timers

    /// Arms the idle timer and, if configured, the resource timer (again after a resume and
    /// before each retry).
    func armTimers(_ timeouts: ResolvedSettings.Timeouts) {
        let (idle, resource) = (timeouts.idle, timeouts.resource)
        let idleTimer =
            idle > 0 && idle.isFinite
            ? makeTimer(after: idle) { [weak self] in
                guard let self else { return }
                self.onExecutor { self.idleTimerFired(interval: idle) }
            } : nil
        // A timeout is a failure like any other: the retry policy (and its `decide`) sees it.
        let resourceTimer =
            resource.map { $0 > 0 && $0.isFinite } == true
            ? makeTimer(after: resource!) { [weak self] in
                guard let self else { return }
                self.onExecutor(urgent: true) { self.fail(.timedOut(.resource, after: resource!), response: nil, retryable: true) }
            }
            : nil
        guard idleTimer != nil || resourceTimer != nil else { return }
        transfer { $0.timersArmed(idle: idleTimer, resource: resourceTimer, now: .now()) }.forEach { $0.cancel() }
    }

    func makeTimer(after seconds: TimeInterval, handler: @escaping @Sendable () -> Void) -> DeadlineTimer {
        DeadlineScheduler.shared.schedule(after: seconds, handler: handler)
    }

    private func idleTimerFired(interval: TimeInterval) {
        assertOnExecutor()
        switch transfer({ $0.idleTimerFired(interval: interval, now: .now()) }) {
        case .none: return
        case .reschedule(let timer, let seconds): timer.schedule(after: seconds)
        case .expire: fail(.timedOut(.idle, after: interval), response: nil, retryable: true)
        }
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The life of one ``HTTPRequestOperation`` as a value: its ``State`` (an enum whose cases carry
/// their data), and one `mutating` method per event — enqueued, started, cancelled, paused, an
/// attempt begun, its task stored, a connection awaited, a response head, a body chunk, bytes
/// sent, a redirect, a credential replay, a failure, a retry scheduled or due, a timer fired,
/// the completion claimed and delivered. Each returns what the operation must do next (cancel a
/// task, pause it, send a request, fail, finish, nothing), which the operation does after its
/// lock is released: the operation is "lock, ask the machine, act". An event the state cannot
/// receive (a body chunk before its head) stops a debug build and is dropped in a release one.
///
/// Two rules hold for every event, and the machine's tests (`TransferStateMachineTests`) check
/// them row by row, without sockets:
/// - after ``claimCompletion(_:now:)`` (``State/finished(_:)``) every event does nothing (a
///   completion runs once; a timer, a transport callback or a retry that comes late is dropped);
/// - events of an attempt other than the one in flight (a task cancelled by pause, or
///   superseded by a retry, a redirect, a restart or a replay) are dropped by attempt number.
///
/// The public lifecycle (``HTTPRequestOperation/State``) is read from the state and changed
/// only through ``moved(to:)``, which `HTTPRequestOperation.transition(from:to:)` calls between
/// the KVO notifications the `OperationQueue` needs.
///
/// Its fields are written only by its events (`TransferStateMachine*.swift`); the operation
/// reads them.
struct TransferStateMachine {
    typealias Lifecycle = HTTPRequestOperation.State

    /// The request sent last: the operation's own, a redirect's target, or a retry's.
    var currentRequest: URLRequest
    var state: State = .idle(Idle())
    /// Flag 1 of 2 beside the state: the chunk block is far enough behind that the transfer
    /// paused for it. The backlog belongs to the caller's block, not to an attempt: it
    /// outlives pauses, retries and redirects, so no case could carry it.
    var chunksPaused = false
    /// Flag 2 of 2 beside the state: the last response's body went to the output stream, the
    /// stream channel or the chunk block instead of memory. `responseData` and the processing
    /// read it in every state after the attempt (paused, retrying, finished), so it is a fact
    /// about the last response, not about a case.
    var streamsBody = false
    /// What a started transfer keeps; nil until something first happens to it. Only the
    /// machine's own files (`TransferStateMachine*.swift`) reach it; the operation reads
    /// through the getters below and changes it through the events.
    private(set) var box: TransferRecord?

    init(request: URLRequest) {
        currentRequest = request
    }

    /// The record, made on first use; reads go through `box` and allocate nothing.
    var record: TransferRecord {
        mutating get {
            if let box { return box }
            let made = TransferRecord()
            box = made
            return made
        }
    }

    // MARK: - Reading

    /// Whether the record was made (an operation still waiting has none).
    var hasRecord: Bool { box != nil }
    var attempt: Int { box?.attempt ?? 0 }
    var task: (any TransportTask)? { box?.task }
    var response: HTTPResponseHead? { box?.response }
    var data: Data { box?.data ?? Data() }
    var responseObject: OneWayTransfer<Any?>? { box?.responseObject }
    var error: ConveyorError? { box?.error }
    var metrics: OperationMetrics? { box?.metrics }
    var cancellationReason: ConveyorError.CancellationReason? { box?.cancellationReason }
    var retryCount: Int { box?.retryCount ?? 0 }
    var redirectCount: Int { box?.redirectCount ?? 0 }
    var bytesReceived: Int64 { box?.bytesReceived ?? 0 }
    var bodyFile: ResponseBodyFile? { box?.bodyFile }
    var responseSource: HTTPCache.ResponseSource { box?.responseSource ?? .network }
    /// The settings the current run resolved; nil before the operation started.
    var settings: ResolvedSettings? { box?.settings }
    var completionDelivered: Bool {
        if case .finished(let finished) = state { return finished.completionRan }
        return false
    }
    /// An iOS background task held while the operation runs (see `setShouldExecuteAsBackgroundTask`).
    var backgroundTask: BackgroundTaskRequest? {
        get { box?.backgroundTask }
        set { record.backgroundTask = newValue }
    }
    /// Where a paused transfer can continue: the bytes kept, their validator, the file and the
    /// whole body's size (-1 when unknown); nil unless paused with such bytes.
    var resumePoint: (offset: Int64, validator: String, file: ResponseBodyFile, total: Int64)? {
        guard lifecycle == .paused, let record = box, record.resumeOffset > 0, let validator = record.resumeValidator,
            let file = record.bodyFile
        else { return nil }
        return (record.resumeOffset, validator, file, keptTotal(record))
    }

    /// Whether events of `attempt` are listened to: the one in flight.
    func isCurrent(_ attempt: Int) -> Bool {
        inFlight?.number == attempt
    }

    // MARK: - The queue and the caller

    /// Moves the public lifecycle; only `HTTPRequestOperation.transition(from:to:)` calls it,
    /// after checking `lifecycle.canTransition(to: next)`.
    mutating func moved(to next: Lifecycle) {
        switch (state, next) {
        case (.idle(let idle), .paused): state = .pausedBeforeStart(idle)
        case (.idle, .executing): state = .preparing
        case (.pausedBeforeStart(let idle), .ready): state = .idle(idle)
        case (.paused(announced: false), .paused): state = .paused(announced: true)
        // Resumed: ready for the `executing` that follows at once (it ran, so it is not enqueued again).
        case (.paused(announced: true), .ready): state = .idle(Idle(started: true, enqueued: true))
        // A `pause()` that found the operation ready while its queue started it: the run has
        // sent nothing yet, and sends nothing now (see ``mayBeginAttempt``).
        case (.preparing, .paused), (.awaitingCredential, .paused), (.adapting, .paused), (.connecting, .paused),
            (.receiving, .paused), (.retrying, .paused):
            state = .paused(announced: true)
        case (.finished(var finished), _):
            finished.lifecycle = next
            state = .finished(finished)
        default: impossible("moved(to: \(next))")
        }
    }

    /// A client enqueues the operation. Returns false when it was enqueued or started before.
    mutating func enqueue() -> Bool {
        switch state {
        case .idle(var idle):
            defer { state = .idle(idle) }
            return idle.enqueue()
        case .pausedBeforeStart(var idle):
            defer { state = .pausedBeforeStart(idle) }
            return idle.enqueue()
        default: return false
        }
    }

    /// The request could not be built: the operation fails with `error` when it starts.
    mutating func preflightFailed(_ error: ConveyorError) {
        guard !hasStarted else { return }
        record.preflightError = error
    }

    enum StartAction {
        /// Already started, or paused before the queue got to it (`resume()` starts it).
        case none
        case finish(ConveyorError)
        /// Move to `executing`, arm the timers, send the current request.
        case execute
    }

    /// The queue calls `start()`.
    mutating func start(isCancelled: Bool, now: DispatchTime, date: Date) -> StartAction {
        switch state {
        case .idle(var idle) where !idle.started:
            idle.started = true
            state = .idle(idle)
        case .pausedBeforeStart(var idle) where !idle.started:
            idle.started = true
            state = .pausedBeforeStart(idle)
        default: return .none
        }
        guard lifecycle == .ready else { return .none }
        if isCancelled { return .finish(.cancelled(reason: cancellationReason ?? .explicit)) }
        if let error = box?.preflightError { return .finish(error) }
        _ = firstRun(now: now, date: date)
        return .execute
    }

    /// The operation executes for the first time — from ``start(isCancelled:now:date:)``, or
    /// from `resume()` of one paused before its queue started it: records the start. False when
    /// it ran before (a resume after a pause mid-transfer), or once finishing.
    mutating func firstRun(now: DispatchTime, date: Date) -> Bool {
        guard !isFinishing, box?.startTime == nil else { return false }
        record.startDate = date
        record.startTime = now
        return true
    }

    /// The settings of the run that begins now: at start, and at each resume after a pause.
    mutating func settingsResolved(_ settings: ResolvedSettings) {
        record.settings = settings
    }

    /// `cancel(reason:)` was called; the first reason wins. Recorded before `Operation` marks
    /// the operation cancelled, so whoever sees `isCancelled` finds the reason.
    mutating func cancelRequested(_ reason: ConveyorError.CancellationReason) {
        if record.cancellationReason == nil { record.cancellationReason = reason }
    }

    enum CancelAction { case none, finish, returnToReady }

    /// What a cancel does once `Operation` recorded it. A ready operation finishes when its queue
    /// starts it; an executing one — or a paused one its queue started — finishes now. A paused
    /// one the queue has not started goes back to ready: telling corelibs' `OperationQueue`
    /// "finished" about an operation it has not started crashes it (in `_schedule()`).
    func cancelled() -> CancelAction {
        if isFinishing { return .none }
        if lifecycle == .executing || (lifecycle == .paused && hasStarted) { return .finish }
        return lifecycle == .paused ? .returnToReady : .none
    }

    /// What a halted transfer leaves for the operation to stop, outside the lock.
    struct Halt {
        var task: (any TransportTask)?
        var timers: [DeadlineTimer]
        var file: ResponseBodyFile?
    }

    enum PauseAction {
        case none
        /// Not started yet: only the lifecycle moves.
        case pauseWaiting
        /// Stop the task and timers, close the body file (``keptBytesLost()`` if that fails).
        case stop(Halt)
    }

    /// `pause()`: the current attempt is dropped, its bytes kept where a ranged request can continue them.
    mutating func pause() -> PauseAction {
        guard !isFinishing, lifecycle == .ready || lifecycle == .executing else { return .none }
        guard lifecycle == .executing else { return .pauseWaiting }
        state = .paused(announced: false)
        let record = self.record
        let file = keepReceivedBytes()
        defer { record.task = nil }
        return .stop(Halt(task: record.task, timers: record.takeTimers(), file: file))
    }

    /// The kept bytes did not all reach the file: the next attempt starts over, not at a gap.
    mutating func keptBytesLost() {
        guard !isFinishing, let record = box else { return }
        record.resumeOffset = 0
        record.resumeValidator = nil
    }

    /// A download continues a ``FileDownloadOperation/ResumeState`` saved by an earlier run.
    mutating func continues(saved offset: Int64, validator: String, total: Int64, file: ResponseBodyFile) {
        guard !hasStarted else { return }
        let record = self.record
        record.resumeOffset = offset
        record.resumeValidator = validator
        record.resumeTotal = total
        record.bytesReceived = offset
        record.bodyFile = file
    }

    // MARK: - Timers

    /// The idle and resource timers were made (at start, resume and each retry). Returns the
    /// timers to cancel at once: those it replaces, or these when the operation stopped meanwhile.
    mutating func timersArmed(idle: DeadlineTimer?, resource: DeadlineTimer?, now: DispatchTime) -> [DeadlineTimer] {
        guard mayBeginAttempt else { return [idle, resource].compactMap { $0 } }
        let record = self.record
        var replaced: [DeadlineTimer] = []
        if let idle {
            if let old = record.idleTimer { replaced.append(old) }
            record.idleTimer = idle
            record.lastActivity = now
        }
        if let resource {
            if let old = record.resourceTimer { replaced.append(old) }
            record.resourceTimer = resource
        }
        return replaced
    }

    enum IdleAction {
        case none
        case reschedule(DeadlineTimer, after: Double)
        /// Fail with `.timedOut(.idle)`.
        case expire
    }

    /// The idle timer woke. Idle means no byte moved for `interval`: rather than rescheduling on
    /// every chunk, the timer wakes at the earliest possible deadline and re-arms from the last
    /// activity. Waiting between attempts, or for a connection while the origin's connections
    /// serve other requests, is not the transfer's silence.
    func idleTimerFired(interval: Double, now: DispatchTime) -> IdleAction {
        guard mayBeginAttempt, let record = box, let timer = record.idleTimer else { return .none }
        let last = record.lastActivity.uptimeNanoseconds
        let idle = now.uptimeNanoseconds > last ? Double(now.uptimeNanoseconds - last) / 1e9 : 0
        let remaining = interval - idle
        // No task: between attempts or waiting for a credential, which is not silence — but the
        // client's request adapters running for this attempt are (they are the caller's code).
        let adapting = if case .adapting = state { true } else { false }
        if remaining > 0.001 || (record.task == nil && !adapting) || inFlight?.waitsForConnection == true {
            return .reschedule(timer, after: max(remaining, interval / 4))
        }
        return .expire
    }

    // MARK: - Attempts

    /// What an attempt about to be sent carries.
    struct Attempt {
        let number: Int
        /// Which attempt this is for the caller, from 1: the first request, then one more for
        /// each redirect, retry, resume and replay (``number`` also counts attempts dropped).
        let ordinal: Int
        /// Body bytes kept that a `Range` request continues (0: none; the cache is used then).
        let resumeOffset: Int64
        /// The validator sent as `If-Range` with it.
        let resumeValidator: String?
        /// The request's body is a caller's stream an earlier attempt read: it cannot be sent.
        var repeatsSpentBodyStream = false
    }

    /// An attempt is sent: the first request, a redirect's target, a retry, a resume or a replay.
    /// `adapting` when the client's request adapters run before the task is made: the idle
    /// timer counts that time (see ``idleTimerFired(interval:now:)``).
    mutating func attemptBegins(_ request: URLRequest, now: DispatchTime, adapting: Bool = false) -> Attempt? {
        guard mayBeginAttempt else { return nil }
        let record = self.record
        record.attempt += 1
        record.attemptsSent += 1
        let flight = InFlight(number: record.attempt)
        state = adapting ? .adapting(flight) : .connecting(flight)
        record.transferMetrics = nil
        record.pendingRedirect = nil
        currentRequest = request
        record.lastActivity = now
        if record.resumeOffset == 0 { record.responseSource = .network }
        var attempt = Attempt(
            number: record.attempt, ordinal: record.attemptsSent, resumeOffset: record.resumeOffset, resumeValidator: record.resumeValidator
        )
        // A caller's stream is read as it is sent and cannot be rewound (Conveyor's own start over).
        if let stream = request.httpBodyStream, !stream.startsOver {
            attempt.repeatsSpentBodyStream = record.sentCallerBodyStream == ObjectIdentifier(stream)
            record.sentCallerBodyStream = ObjectIdentifier(stream)
        }
        return attempt
    }

    /// Whether the current request's body is a caller's stream an attempt has read already.
    var currentBodyStreamIsSpent: Bool {
        guard let sent = box?.sentCallerBodyStream, let stream = currentRequest.httpBodyStream else { return false }
        return ObjectIdentifier(stream) == sent
    }

    /// The client's request adapters answered for `attempt`: its task is made next. False when
    /// it is no longer the attempt in flight (a cancel, a pause or a timeout meanwhile).
    mutating func adapted(attempt: Int) -> Bool {
        guard case .adapting(let flight) = state, flight.number == attempt else { return false }
        state = .connecting(flight)
        return true
    }

    enum TaskAction { case none, cancel, pause, resume }

    /// The transport started `task` for `attempt`. A task of an attempt no longer current is
    /// cancelled; a pause asked for before it was stored is applied now, and a pause the
    /// transfer applied itself meanwhile is lifted when the consumer has caught up since.
    mutating func taskStarted(_ task: any TransportTask, attempt: Int) -> TaskAction {
        guard isCurrentTransport(attempt, "taskStarted") else { return .cancel }
        record.task = task
        return updateFlight { flight in
            defer { flight.demand = .flowing }
            switch flight.demand {
            case .flowing: return .none
            case .pauseWhenTaskStarts, .pausedBeforeTask(caughtUp: false): return .pause
            case .pausedBeforeTask(caughtUp: true): return .resume
            }
        } ?? .cancel
    }

    /// The transport asks, before the task is stored, whether to pause its body at once.
    mutating func transportWantsPause(attempt: Int) -> Bool {
        guard isCurrentTransport(attempt, "transportWantsPause"), box?.task == nil else { return false }
        return updateFlight { flight in
            switch flight.demand {
            case .flowing, .pausedBeforeTask(caughtUp: true): return false
            case .pauseWhenTaskStarts, .pausedBeforeTask(caughtUp: false):
                flight.demand = .pausedBeforeTask(caughtUp: false)
                return true
            }
        } ?? false
    }

    /// The attempt waits for a connection: the idle timer does not count that time.
    mutating func awaitsConnection(attempt: Int) {
        guard isCurrentTransport(attempt, "awaitsConnection") else { return }
        updateFlight { $0.waitsForConnection = true }
    }

    /// The attempt got its connection: its idle time starts now.
    mutating func leftConnectionQueue(attempt: Int, now: DispatchTime) {
        guard isCurrentTransport(attempt, "leftConnectionQueue"), inFlight?.waitsForConnection == true, let record = box else { return }
        updateFlight { $0.waitsForConnection = false }
        record.lastActivity = now
    }

    /// The transport's timings for `attempt`, kept for the operation's metrics.
    mutating func collected(_ metrics: TransferMetrics, attempt: Int) {
        guard isCurrentTransport(attempt, "collected"), let record = box else { return }
        record.transferMetrics = metrics
    }

    /// The cache says where the attempt's response comes from.
    mutating func sourceReported(_ source: HTTPCache.ResponseSource, attempt: Int) {
        guard isCurrentTransport(attempt, "sourceReported"), let record = box else { return }
        record.responseSource = source
    }

    /// Credential values the attempt carries; false when the operation finished meanwhile (the
    /// caller unpins them then: nobody else would).
    mutating func secretsPinned(_ values: [String]) -> Bool {
        guard !isFinishing else { return false }
        let record = self.record
        // The first attempt's values are kept as they are: no copy.
        if record.pinnedSecrets.isEmpty { record.pinnedSecrets = values } else { record.pinnedSecrets.append(contentsOf: values) }
        return true
    }
}

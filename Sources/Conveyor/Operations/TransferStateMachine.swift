import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The life of one ``HTTPRequestOperation`` as a value: every in-flight field and flag, and one
/// `mutating` method per event — enqueued, started, cancelled, paused, an attempt begun, its
/// task stored, a connection awaited, a response head, a body chunk, bytes sent, a redirect, a
/// credential replay, a failure, a retry scheduled or due, a timer fired, the completion
/// claimed and delivered. Each returns what the operation must do next (cancel a task, pause
/// it, send a request, fail, finish, nothing), which the operation does after its lock is
/// released: the operation is "lock, ask the machine, act".
///
/// Two rules hold for every event, and the machine's tests (`TransferStateMachineTests`) check
/// them event by event, without sockets:
/// - after ``claimCompletion(_:now:)`` every event does nothing (a completion runs once; a
///   timer, a transport callback or a retry that comes late is dropped);
/// - events of an attempt other than the current one (a task cancelled by pause, or superseded
///   by a retry, a redirect, a restart or a replay) are dropped by attempt number.
///
/// The public lifecycle (``HTTPRequestOperation/State``) is changed only through
/// ``moved(to:)``, which `HTTPRequestOperation.transition(from:to:)` calls between the KVO
/// notifications the `OperationQueue` needs.
///
/// Its fields are written only by its events (this file and `TransferStateMachine+Response.swift`);
/// the operation reads them.
struct TransferStateMachine {
    typealias Lifecycle = HTTPRequestOperation.State

    /// The request sent last: the operation's own, a redirect's target, or a retry's.
    var currentRequest: URLRequest
    private(set) var lifecycle: Lifecycle = .ready
    /// The queue (or the caller) has called `start()`.
    private(set) var hasStarted = false
    /// A client has enqueued it: an operation runs once.
    private(set) var isEnqueued = false
    /// The completion is claimed: every later event does nothing.
    var isFinishing = false
    /// `pause()` stopped the transfer; until the lifecycle moves on, no attempt is sent.
    private var isPausing = false
    /// A consumer asked for a pause before the attempt's task was stored (see ``pauseReceiving()``).
    var pausesWhenTaskStarts = false
    /// The transfer paused itself for that request before the task was stored.
    var pausedBeforeTask = false
    /// The current response's body goes to the output stream, the stream channel or the chunk
    /// block instead of memory.
    var streamsBody = false
    /// The current response is the one delivered (not a redirect being followed): its head and
    /// body go to the hooks.
    var reportsResponse = false
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
    var completionDelivered: Bool { box?.completionDelivered ?? false }
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

    /// Whether events of `attempt` are listened to: the current one, running, not finishing.
    func isCurrent(_ attempt: Int) -> Bool {
        !isFinishing && lifecycle == .executing && box?.attempt == attempt
    }

    /// Whether a new attempt may be sent (checked again when it begins).
    var mayBeginAttempt: Bool { !isFinishing && !isPausing && lifecycle == .executing }

    // MARK: - The queue and the caller

    /// Moves the public lifecycle; only `HTTPRequestOperation.transition(from:to:)` calls it.
    mutating func moved(to next: Lifecycle) {
        lifecycle = next
        if next != .paused { isPausing = false }
    }

    /// A client enqueues the operation. Returns false when it was enqueued or started before.
    mutating func enqueue() -> Bool {
        defer { isEnqueued = true }
        return !isEnqueued && !hasStarted
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
        guard !hasStarted else { return .none }
        hasStarted = true
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
        isPausing = true
        let record = self.record
        record.attempt += 1
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
        guard !isFinishing, lifecycle == .executing, let record = box, let timer = record.idleTimer else { return .none }
        let last = record.lastActivity.uptimeNanoseconds
        let idle = now.uptimeNanoseconds > last ? Double(now.uptimeNanoseconds - last) / 1e9 : 0
        let remaining = interval - idle
        // No task: between attempts or waiting for a credential, which is not silence — but the
        // client's request adapters running for this attempt are (they are the caller's code).
        if remaining > 0.001 || (record.task == nil && !record.adapting) || record.awaitsConnection {
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
        record.adapting = adapting
        pausesWhenTaskStarts = false
        pausedBeforeTask = false
        record.transferMetrics = nil
        record.pendingRedirect = nil
        currentRequest = request
        record.lastActivity = now
        record.awaitsConnection = false
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

    enum TaskAction { case none, cancel, pause, resume }

    /// The transport started `task` for `attempt`. A task of an attempt no longer current is
    /// cancelled; a pause asked for before it was stored is applied now, and a pause the
    /// transfer applied itself meanwhile is lifted when the consumer has caught up since.
    mutating func taskStarted(_ task: any TransportTask, attempt: Int) -> TaskAction {
        guard !isFinishing, box?.attempt == attempt else { return .cancel }
        record.task = task
        record.adapting = false
        defer {
            pausesWhenTaskStarts = false
            pausedBeforeTask = false
        }
        if pausesWhenTaskStarts { return .pause }
        return pausedBeforeTask ? .resume : .none
    }

    /// The transport asks, before the task is stored, whether to pause its body at once.
    mutating func transportWantsPause(attempt: Int) -> Bool {
        guard isCurrent(attempt), box?.task == nil, pausesWhenTaskStarts else { return false }
        pausedBeforeTask = true
        return true
    }

    /// The attempt waits for a connection: the idle timer does not count that time.
    mutating func awaitsConnection(attempt: Int) {
        guard isCurrent(attempt), let record = box else { return }
        record.awaitsConnection = true
    }

    /// The attempt got its connection: its idle time starts now.
    mutating func leftConnectionQueue(attempt: Int, now: DispatchTime) {
        guard isCurrent(attempt), let record = box, record.awaitsConnection else { return }
        record.awaitsConnection = false
        record.lastActivity = now
    }

    /// The transport's timings for `attempt`, kept for the operation's metrics.
    mutating func collected(_ metrics: TransferMetrics, attempt: Int) {
        guard isCurrent(attempt), let record = box else { return }
        record.transferMetrics = metrics
    }

    /// The cache says where the attempt's response comes from.
    mutating func sourceReported(_ source: HTTPCache.ResponseSource, attempt: Int) {
        guard isCurrent(attempt), let record = box else { return }
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

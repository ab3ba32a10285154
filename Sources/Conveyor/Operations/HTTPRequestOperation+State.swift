import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// Where an operation is in its lifecycle.
    ///
    /// `ready → executing ⇄ paused → … → finished`: ``HTTPRequestOperation/pause()`` moves a
    /// ready or executing operation to `paused`, ``HTTPRequestOperation/resume()`` moves it back
    /// to `ready` (and on to `executing` when its queue had already started it). `finished` is
    /// terminal; cancellation is allowed from every other state.
    public enum State: Sendable, Equatable {
        /// Created, not started (or resumed, about to start again).
        case ready
        /// Sending the request or receiving the response (also while waiting to retry).
        case executing
        /// Stopped by `pause()`; keeps what it received so `resume()` can continue.
        case paused
        /// Completed, failed or cancelled; the completion block has been scheduled.
        case finished

        /// Whether the lifecycle allows moving from `self` to `next`.
        public func canTransition(to next: State) -> Bool {
            switch (self, next) {
            case (.ready, .executing), (.ready, .paused), (.executing, .paused), (.paused, .ready): return true
            case (.ready, .finished), (.executing, .finished), (.paused, .finished): return true
            default: return false
            }
        }
    }

    /// The operation's lifecycle state.
    public var state: State { mutableState.withLock { $0.state } }

    /// Every mutable property of an operation, guarded together by `mutableState`.
    struct MutableState {
        var currentRequest: URLRequest
        var response: HTTPResponseHead? {
            get { runBox?.response }
            _modify { yield &run.response }
        }
        var data: Data {
            get { runBox?.data ?? Data() }
            _modify { yield &run.data }
        }
        var error: ConveyorError? {
            get { runBox?.error }
            _modify { yield &run.error }
        }
        var responseObject: OneWayTransfer<Any?>? {
            get { runBox?.responseObject }
            _modify { yield &run.responseObject }
        }
        var success: Success?
        var failure: Failure?
        var callbackQueue: DispatchQueue = .conveyorDefaultCallbackQueue
        var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
        var acceptableContentTypes: Set<String>?
        var responseSerializer: any ResponseSerializer = DataResponseSerializer()
        /// Immutable once made: read out and used by the challenge handling.
        var credential = LockedReference<URLCredential?>(nil)
        var challengeHandler: AuthenticationChallengeHandler? {
            get { hooksBox?.value.challengeHandler }
            set { hooks.challengeHandler = newValue }
        }
        /// Boxed (32 bytes inline); nil is `.default`.
        var redirectPolicy: RedirectPolicy {
            get { redirectPolicyBox?.value ?? .default }
            set { redirectPolicyBox = ColdBox(newValue) }
        }
        /// Shared like `retryPolicyBox`.
        var redirectPolicyBox: ColdBox<RedirectPolicy>?
        /// Boxed (72 bytes inline); nil is `.none`.
        var retryPolicy: RetryPolicy {
            get { retryPolicyBox?.value ?? .none }
            set { retryPolicyBox = ColdBox(newValue) }
        }
        /// A client hands every operation it adopts the same box (no allocation per operation).
        var retryPolicyBox: ColdBox<RetryPolicy>?
        var idleTimeout: TimeInterval
        var userInfo: [String: any Sendable] = [:]
        var transport: any Transport = TransportFactory.shared
        /// Stamps a credential on every attempt and refreshes it (see ``Authenticator``).
        var authenticator: (any Authenticator)?
        /// What the authenticator stamped on the current attempt; nil when nothing was.
        var appliedCredentialID: String? {
            get { runBox?.appliedCredentialID }
            _modify { yield &run.appliedCredentialID }
        }
        /// Attempts sent again after a credential refresh: at most one, and not retries.
        var credentialReplays: Int {
            get { runBox?.credentialReplays ?? 0 }
            _modify { yield &run.credentialReplays }
        }
        /// Refreshes waited for before one attempt could be stamped; bounded so that an
        /// authenticator whose credentials keep expiring at once cannot loop.
        var credentialWaits: Int {
            get { runBox?.credentialWaits ?? 0 }
            _modify { yield &run.credentialWaits }
        }
        /// The client-inheritable settings assigned on the operation itself; a client leaves them alone.
        var assignedSettings: ClientSettings = []
        /// How often a client's settings were adopted (saturating), which tests check is once
        /// per operation and client. One byte in the padding after `assignedSettings`: free.
        var settingsAdoptions: UInt8 = 0
        /// The client whose settings the operation took last (weak: a client owns its operations' queue).
        weak var adoptedClient: HTTPClient?
        var task: (any TransportTask)? {
            get { runBox?.task }
            _modify { yield &run.task }
        }
        /// Numbers transport tasks; events of an older task (one cancelled by pause or
        /// superseded by a retry) are ignored.
        var attempt: Int {
            get { runBox?.attempt ?? 0 }
            _modify { yield &run.attempt }
        }
        var redirectCount: Int {
            get { runBox?.redirectCount ?? 0 }
            _modify { yield &run.redirectCount }
        }
        /// Failed attempts that were retried.
        var retryCount: Int {
            get { runBox?.retryCount ?? 0 }
            _modify { yield &run.retryCount }
        }
        /// Body bytes already held (in `data` or the body file) that a `Range` request continues.
        var resumeOffset: Int64 {
            get { runBox?.resumeOffset ?? 0 }
            _modify { yield &run.resumeOffset }
        }
        /// The total those bytes belong to, from a saved resume state; -1 when unknown.
        var resumeTotal: Int64 {
            get { runBox?.resumeTotal ?? -1 }
            _modify { yield &run.resumeTotal }
        }
        /// The `ETag` or `Last-Modified` sent as `If-Range` with that `Range` request.
        var resumeValidator: String? {
            get { runBox?.resumeValidator }
            _modify { yield &run.resumeValidator }
        }
        /// Dispatch sources are thread-safe; the box only tells the compiler so.
        var idleTimer: DeadlineTimer? {
            get { runBox?.idleTimer }
            _modify { yield &run.idleTimer }
        }
        var resourceTimer: DeadlineTimer? {
            get { runBox?.resourceTimer }
            _modify { yield &run.resourceTimer }
        }
        var retryTimer: DeadlineTimer? {
            get { runBox?.retryTimer }
            _modify { yield &run.retryTimer }
        }
        var lastActivity: DispatchTime {
            get { runBox?.lastActivity ?? .now() }
            _modify { yield &run.lastActivity }
        }
        /// The current attempt waits for a connection (the transport says so: curl, and the
        /// URLSession transport on Linux): the idle timer does not count that time.
        var awaitsConnection: Bool {
            get { runBox?.awaitsConnection ?? false }
            _modify { yield &run.awaitsConnection }
        }
        var startDate: Date? {
            get { runBox?.startDate }
            _modify { yield &run.startDate }
        }
        var startTime: DispatchTime? {
            get { runBox?.startTime }
            _modify { yield &run.startTime }
        }
        var firstByteTime: DispatchTime? {
            get { runBox?.firstByteTime }
            _modify { yield &run.firstByteTime }
        }
        var bytesSent: Int64 {
            get { runBox?.bytesSent ?? 0 }
            _modify { yield &run.bytesSent }
        }
        /// Body bytes of the current response, in memory or in `bodyFile`.
        var bytesReceived: Int64 {
            get { runBox?.bytesReceived ?? 0 }
            _modify { yield &run.bytesReceived }
        }
        /// Where the current response's body goes when not into `data` (file downloads).
        var bodyFile: ResponseBodyFile? {
            get { runBox?.bodyFile }
            _modify { yield &run.bodyFile }
        }
        /// The caller's `outputStream`, wrapped; nil without one.
        var outputSink: OutputStreamSink?
        /// The consumer of a streamed body (``HTTPStream``); nil without one.
        var bodyChannel: BodyChannel?
        /// Receives each body chunk on the callback queue instead of memory.
        var chunkHandler: ChunkHandler? {
            get { hooksBox?.value.chunkHandler }
            set { hooks.chunkHandler = newValue }
        }
        /// Chunk bytes dispatched to `chunkHandler` and not yet handled; past the limit the
        /// transfer pauses until the callback queue catches up.
        var chunkBytesPending: Int {
            get { runBox?.chunkBytesPending ?? 0 }
            _modify { yield &run.chunkBytesPending }
        }
        var chunksPaused: Bool {
            get { runBox?.chunksPaused ?? false }
            _modify { yield &run.chunksPaused }
        }
        /// The `Progress` objects, once someone asked for them (see `downloadProgress`).
        var uploadProgressObject: LockedReference<Progress>? {
            get { runBox?.uploadProgressObject }
            _modify { yield &run.uploadProgressObject }
        }
        var downloadProgressObject: LockedReference<Progress>? {
            get { runBox?.downloadProgressObject }
            _modify { yield &run.downloadProgressObject }
        }
        /// The totals last reported, for a `Progress` created mid-transfer.
        var uploadExpected: Int64 {
            get { runBox?.uploadExpected ?? -1 }
            _modify { yield &run.uploadExpected }
        }
        var downloadExpected: Int64 {
            get { runBox?.downloadExpected ?? -1 }
            _modify { yield &run.downloadExpected }
        }
        var responseReceivedHandler: ResponseHandler? {
            get { hooksBox?.value.responseReceivedHandler }
            set { hooks.responseReceivedHandler = newValue }
        }
        var uploadProgressHandler: ProgressHandler? {
            get { hooksBox?.value.uploadProgressHandler }
            set { hooks.uploadProgressHandler = newValue }
        }
        var downloadProgressHandler: ProgressHandler? {
            get { hooksBox?.value.downloadProgressHandler }
            set { hooks.downloadProgressHandler = newValue }
        }
        var metrics: OperationMetrics? {
            get { runBox?.metrics }
            _modify { yield &run.metrics }
        }
        /// What the transport measured of the latest attempt, if it measures.
        var transferMetrics: TransferMetrics? {
            get { runBox?.transferMetrics }
            _modify { yield &run.transferMetrics }
        }
        /// A request that could not be built: the operation fails with this as soon as it starts.
        var preflightError: ConveyorError? {
            get { runBox?.preflightError }
            _modify { yield &run.preflightError }
        }
        /// The credential values the attempts carry, pinned until the operation finishes.
        var pinnedSecrets: [String] {
            get { runBox?.pinnedSecrets ?? [] }
            _modify { yield &run.pinnedSecrets }
        }
        /// Why `cancel` was called; the first reason wins.
        var cancellationReason: ConveyorError.CancellationReason? {
            get { runBox?.cancellationReason }
            _modify { yield &run.cancellationReason }
        }
        /// The cache attempts go through; nil sends every attempt to the network.
        var cache: HTTPCache?
        var cacheResponseHandler: CacheResponseHandler? {
            get { hooksBox?.value.cacheResponseHandler }
            set { hooks.cacheResponseHandler = newValue }
        }
        /// Where the current response came from.
        var responseSource: HTTPCache.ResponseSource {
            get { runBox?.responseSource ?? .network }
            _modify { yield &run.responseSource }
        }
        /// An iOS background task held while the operation runs (see `setShouldExecuteAsBackgroundTask`).
        var backgroundTask: BackgroundTaskRequest? {
            get { runBox?.backgroundTask }
            _modify { yield &run.backgroundTask }
        }
        /// The completion block has run (or there was none): see `completionDelivered()`.
        var completionDelivered: Bool {
            get { runBox?.completionDelivered ?? false }
            _modify { yield &run.completionDelivered }
        }
        /// Called once the completion block has run (``HTTPClient/drain(timeout:queued:completionGrace:)`` waits so).
        var deliveryWaiters: [@Sendable () -> Void] {
            get { runBox?.deliveryWaiters ?? [] }
            _modify { yield &run.deliveryWaiters }
        }

        /// The blocks a caller rarely sets, together behind one pointer: six optional closures
        /// are 96 bytes inline in every waiting operation.
        struct Hooks: Sendable {
            var challengeHandler: AuthenticationChallengeHandler?
            var chunkHandler: ChunkHandler?
            var responseReceivedHandler: ResponseHandler?
            var uploadProgressHandler: ProgressHandler?
            var downloadProgressHandler: ProgressHandler?
            var cacheResponseHandler: CacheResponseHandler?

            var isEmpty: Bool {
                challengeHandler == nil && chunkHandler == nil && responseReceivedHandler == nil && uploadProgressHandler == nil
                    && downloadProgressHandler == nil && cacheResponseHandler == nil
            }
        }
        private var hooksBox: ColdBox<Hooks>?
        /// Written through; read field by field from the box (the getters above), so a read per
        /// body chunk copies one closure, not six.
        private var hooks: Hooks {
            get { hooksBox?.value ?? Hooks() }
            // A client adopting its settings writes nil to most of these: that allocates nothing.
            set { hooksBox = newValue.isEmpty ? nil : ColdBox(newValue) }
        }

        /// What a running operation keeps (see ``RunState``); nil until something sets it.
        private var runBox: RunState?
        /// Whether the run state was made (an operation still waiting has none).
        var hasRunState: Bool { runBox != nil }
        /// The run state, made on first use. The fields above read it through `runBox`, so a
        /// read on an operation still waiting allocates nothing.
        private var run: RunState {
            mutating get {
                if let runBox { return runBox }
                let made = RunState()
                runBox = made
                return made
            }
        }

        // The small fields last, together: between 8-byte fields each would take 8 bytes.
        var resourceTimeout: TimeInterval?
        /// The most bytes a body kept in memory may have; nil for no limit.
        var maximumResponseSize: Int64? = HTTPRequestOperation.defaultMaximumResponseSize
        var state: State = .ready
        /// A consumer asked for a pause before the attempt's task was stored (see `pauseReceiving()`).
        var pausesWhenTaskStarts = false
        /// The transfer paused itself for that request before the task was stored.
        var pausedBeforeTask = false
        /// Whether the queue (or the caller) has called `start()`.
        var started = false
        /// Whether a client has enqueued it (an operation runs once).
        var enqueued = false
        /// Set by the first caller of `finish`; every later caller does nothing.
        var completionClaimed = false
        /// Whether the current response's body goes to `outputSink` or `bodyChannel` instead of `data`.
        var streamsBody = false
        /// Completion blocks run on the finishing thread instead of `callbackQueue` (async
        /// callers resume a continuation, which needs no queue hop).
        var deliversInline = false
        /// Whether the current response is the one delivered (not a redirect being followed):
        /// its head and body go to the hooks and the response block.
        var reportsResponse = false
        /// The policy set on the operation itself; nil falls back to the request's, then `defaultCachePolicy`.
        var cachePolicy: HTTPCache.Policy?
        /// The client's policy.
        var defaultCachePolicy: HTTPCache.Policy = .useProtocolCachePolicy

        init(currentRequest: URLRequest) {
            self.currentRequest = currentRequest
            self.idleTimeout = currentRequest.timeoutInterval
        }

        /// Takes every timer out of the state, for the caller to cancel outside the lock.
        mutating func takeTimers() -> [DeadlineTimer] {
            defer {
                idleTimer = nil
                resourceTimer = nil
                retryTimer = nil
            }
            return [idleTimer, resourceTimer, retryTimer].compactMap { $0 }
        }
    }

    /// The one place the state changes and the queue is told about it through KVO:
    /// corelibs `OperationQueue` learns an asynchronous operation finished only from
    /// `didChangeValue(forKey: "isFinished")`.
    /// - Returns: Whether the transition happened.
    @discardableResult
    func transition(from allowed: Set<State>? = nil, to next: State) -> Bool {
        transitionLock.withLock { _ in
            let current = mutableState.withLock { $0.state }
            guard current.canTransition(to: next), allowed?.contains(current) ?? true else { return false }
            var keys: [String] = []
            if current == .executing || next == .executing { keys.append("isExecuting") }
            if next == .finished { keys.append("isFinished") }
            keys.forEach { willChangeValue(forKey: $0) }
            mutableState.withLock { $0.state = next }
            keys.reversed().forEach { didChangeValue(forKey: $0) }
            return true
        }
    }

    /// Ends the operation with `result`. The first call wins; later ones (a transport
    /// completion racing a cancel or a timeout) do nothing.
    func finish(_ result: Result<OneWayTransfer<Any?>, ConveyorError>) {
        let claimed = mutableState.withLock {
            state -> (
                task: (any TransportTask)?, timers: [DeadlineTimer], file: ResponseBodyFile?, sink: OutputStreamSink?,
                channel: BodyChannel?,
                secrets: [String]
            )? in
            guard !state.completionClaimed else { return nil }
            state.completionClaimed = true
            state.attempt += 1
            switch result {
            case .success(let value): state.responseObject = value
            case .failure(let error): state.error = error
            }
            state.metrics = OperationMetrics(state: state)
            defer {
                state.task = nil
                if state.hasRunState { state.pinnedSecrets = [] }
            }
            return (state.task, state.takeTimers(), state.bodyFile, state.outputSink, state.bodyChannel, state.pinnedSecrets)
        }
        guard let claimed else { return }
        claimed.timers.forEach { $0.cancel() }
        // AFNetworking closed the output stream when the operation finished, however it ended.
        claimed.sink?.close()
        switch result {
        case .success: claimed.channel?.finish(.success(()))
        case .failure(let error): claimed.channel?.finish(.failure(error))
        }
        // A multipart body file Conveyor wrote is removed however the operation ended, and so
        // is a partial download that did not succeed.
        (request.httpBodyStream as? any TemporaryBodyFileOwner)?.temporaryFile?.remove()
        if case .failure = result {
            claimed.task?.cancel()
            claimed.file?.discard()
        }
        transition(to: .finished)
        endBackgroundTaskIfAny()
        NotificationCenter.default.post(name: .conveyorOperationDidFinish, object: self)
        // Pinned through the finish line the logger just wrote; remembered (as recently used)
        // for what is printed later.
        SentSecrets.shared.unpin(claimed.secrets)

        if case .failure(let error) = result { didFinish(error: error) } else { didFinish(error: nil) }
        let (queue, success, failure) = mutableState.withLock { state in
            defer {
                // Release the blocks so an operation captured by its own blocks is not leaked.
                state.success = nil
                state.failure = nil
            }
            return (state.deliversInline ? nil : state.callbackQueue, state.success, state.failure)
        }
        // Told after the block has run, not when it is scheduled: drain waits for the outcome
        // to have been heard.
        switch result {
        case .success(let value):
            if let success, let queue {
                queue.async {
                    success(self, value.value)
                    self.completionDelivered()
                }
                return
            }
            success?(self, value.value)
        case .failure(let error):
            if let failure, let queue {
                queue.async {
                    failure(self, error)
                    self.completionDelivered()
                }
                return
            }
            failure?(self, error)
        }
        completionDelivered()
    }
}

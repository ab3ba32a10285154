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
    public var state: State { transfer { $0.lifecycle } }

    /// Every mutable property of an operation, guarded together by `mutableState`.
    struct MutableState {
        /// The transfer's life: every in-flight field and flag (see ``TransferStateMachine``).
        var transfer: TransferStateMachine
        var success: Success?
        var failure: Failure?
        var callbackQueue: DispatchQueue = .conveyorDefaultCallbackQueue
        var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
        var acceptableContentTypes: Set<String>?
        /// The types a body must have: the operation's, else its serializer's (the one home of that rule).
        var effectiveAcceptableContentTypes: Set<String>? { acceptableContentTypes ?? responseSerializer.acceptableContentTypes }
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
        /// The client's request adapters and event monitors (see ``RequestAdapter``, ``EventMonitor``).
        var clientHooks: ClientHooks?
        /// The client-inheritable settings assigned on the operation itself; a client leaves them alone.
        var assignedSettings: ClientSettings = []
        /// How often a client's settings were adopted (saturating), which tests check is once
        /// per operation and client. One byte in the padding after `assignedSettings`: free.
        var settingsAdoptions: UInt8 = 0
        /// The client whose settings the operation took last (weak: a client owns its operations' queue).
        weak var adoptedClient: HTTPClient?
        /// The caller's `outputStream`, wrapped; nil without one.
        var outputSink: OutputStreamSink?
        /// The consumer of a streamed body (``HTTPStream``); nil without one.
        var bodyChannel: BodyChannel?
        /// Receives each body chunk on the callback queue instead of memory.
        var chunkHandler: ChunkHandler? {
            get { hooksBox?.value.chunkHandler }
            set { hooks.chunkHandler = newValue }
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
        /// The cache attempts go through; nil sends every attempt to the network.
        var cache: HTTPCache?
        var cacheResponseHandler: CacheResponseHandler? {
            get { hooksBox?.value.cacheResponseHandler }
            set { hooks.cacheResponseHandler = newValue }
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

        // The small fields last, together: between 8-byte fields each would take 8 bytes.
        var resourceTimeout: TimeInterval?
        /// The most bytes a body kept in memory may have; nil for no limit.
        var maximumResponseSize: Int64? = HTTPRequestOperation.defaultMaximumResponseSize
        /// Completion blocks run on the finishing thread instead of `callbackQueue` (async
        /// callers resume a continuation, which needs no queue hop).
        var deliversInline = false
        /// The policy set on the operation itself; nil falls back to the request's, then `defaultCachePolicy`.
        var cachePolicy: HTTPCache.Policy?

        /// The policy in force for `request` (the operation's): the one home of the fallback order.
        func effectiveCachePolicy(for request: URLRequest) -> HTTPCache.Policy {
            cachePolicy ?? HTTPCache.Policy(request.cachePolicy) ?? defaultCachePolicy
        }
        /// The client's policy.
        var defaultCachePolicy: HTTPCache.Policy = .useProtocolCachePolicy

        init(request: URLRequest) {
            self.transfer = TransferStateMachine(request: request)
            self.idleTimeout = request.timeoutInterval
        }
    }

    /// The one place the state changes and the queue is told about it through KVO:
    /// corelibs `OperationQueue` learns an asynchronous operation finished only from
    /// `didChangeValue(forKey: "isFinished")`.
    /// - Returns: Whether the transition happened.
    @discardableResult
    func transition(from allowed: Set<State>? = nil, to next: State) -> Bool {
        transitionLock.withLock { _ in
            let current = transfer { $0.lifecycle }
            guard current.canTransition(to: next), allowed?.contains(current) ?? true else { return false }
            var keys: [String] = []
            if current == .executing || next == .executing { keys.append("isExecuting") }
            if next == .finished { keys.append("isFinished") }
            keys.forEach { willChangeValue(forKey: $0) }
            transfer { $0.moved(to: next) }
            keys.reversed().forEach { didChangeValue(forKey: $0) }
            return true
        }
    }

    /// Ends the operation with `result`. The first call wins; later ones (a transport
    /// completion racing a cancel or a timeout) do nothing.
    /// - Returns: Whether this call ended it.
    @discardableResult
    func finish(_ result: Result<OneWayTransfer<Any?>, ConveyorError>) -> Bool {
        assertOnExecutor()
        let claimed = mutableState.withLock { state in
            state.transfer.claimCompletion(result, now: .now()).map {
                (
                    $0, state.outputSink, state.bodyChannel,
                    state.settings.hooks?.monitors.map {
                        ($0, state.transfer.currentRequest, state.transfer.response, state.transfer.metrics)
                    }
                )
            }
        }
        guard let ((halt, secrets), sink, channel, monitored) = claimed else { return false }
        halt.timers.forEach { $0.cancel() }
        // AFNetworking closed the output stream when the operation finished, however it ended.
        sink?.close()
        switch result {
        case .success: channel?.finish(.success(()))
        case .failure(let error): channel?.finish(.failure(error))
        }
        // A multipart body file Conveyor wrote is removed however the operation ended, and so
        // is a partial download that did not succeed.
        (request.httpBodyStream as? any TemporaryBodyFileOwner)?.temporaryFile?.remove()
        if case .failure = result {
            halt.task?.cancel()
            halt.file?.discard()
            transferFailed()
        }
        transition(to: .finished)
        endBackgroundTaskIfAny()
        NotificationCenter.default.post(name: .conveyorOperationDidFinish, object: self)
        if let (monitors, request, response, metrics) = monitored {
            let error: ConveyorError? = if case .failure(let error) = result { error } else { nil }
            monitors.post(self, finishes: true) {
                $0.requestDidFinish(self, request: request, response: response, error: error, metrics: metrics)
            }
        }
        // Pinned through the finish line the logger just wrote; remembered (as recently used)
        // for what is printed later.
        SentSecrets.shared.unpin(secrets)

        if case .failure(let error) = result { didFinish(error: error) } else { didFinish(error: nil) }
        let (queue, success, failure) = mutableState.withLock { state in
            defer {
                // Release the blocks so an operation captured by its own blocks is not leaked.
                state.success = nil
                state.failure = nil
            }
            return (state.settings.completionQueue, state.success, state.failure)
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
                return true
            }
            success?(self, value.value)
        case .failure(let error):
            if let failure, let queue {
                queue.async {
                    failure(self, error)
                    self.completionDelivered()
                }
                return true
            }
            failure?(self, error)
        }
        completionDelivered()
        return true
    }
}

extension HTTPRequestOperation {
    /// Lock → machine: runs one event of the transfer's state machine under the operation's lock
    /// and returns its answer, which the caller acts on after the lock is released.
    func transfer<Answer>(_ event: (inout TransferStateMachine) -> Answer) -> Answer {
        mutableState.withLock { event(&$0.transfer) }
    }

    /// Reads one field of the state under the lock (the settings' and results' getters).
    func read<Value: Sendable>(_ path: any KeyPath<MutableState, Value> & Sendable) -> Value {
        mutableState.withLock { $0[keyPath: path] }
    }

    /// Writes one field of the state under the lock (settings the client does not inherit).
    func write<Value: Sendable>(_ path: any WritableKeyPath<MutableState, Value> & Sendable, _ value: Value) {
        mutableState.withLock { $0[keyPath: path] = value }
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension TransferStateMachine {
    // MARK: - Credentials

    /// The authenticator stamped `credentialID` on the attempt about to be sent.
    mutating func credentialApplied(_ credentialID: String) {
        guard !isFinishing else { return }
        record.appliedCredentialID = credentialID
        record.credentialWaits = 0
        if case .awaitingCredential = state { state = .preparing }
    }

    /// The attempt goes to another origin: it carries no credential of the authenticator's.
    mutating func credentialWithheld() {
        guard let record = box else { return }
        record.appliedCredentialID = nil
    }

    enum CredentialWaitAction: Equatable {
        /// The transfer does not run (a pause or the completion came first): nothing to wait for.
        case none
        /// Wait for the authenticator's refresh, then send the attempt again.
        case wait(count: Int)
        /// The attempt waited for `refreshes` refreshes already and got no credential it could
        /// use: fail with ``ConveyorError/CredentialRefreshFailureReason/noUsableCredential(refreshes:)``.
        case giveUp(refreshes: Int)
    }

    /// The authenticator had no credential to stamp: the attempt waits for its refresh, unless
    /// it waited `maximumWaits` times already. One wait is the rule; a second or third lets a
    /// refresh another operation started meanwhile finish. Past that the authenticator's
    /// credentials expire faster than they can be used, and waiting again would loop.
    mutating func credentialWaitBegins(maximumWaits: Int) -> CredentialWaitAction {
        guard mayBeginAttempt else { return .none }
        state = .awaitingCredential(replay: false)
        record.credentialWaits += 1
        let waits = record.credentialWaits
        return waits <= maximumWaits ? .wait(count: waits) : .giveUp(refreshes: waits - 1)
    }

    /// Whether a refused credential may be refreshed and the request replayed: the attempt is
    /// current, carried a stamped credential, and no replay happened yet (one at most).
    func mayReplay(attempt: Int) -> Bool {
        isCurrent(attempt) && box?.appliedCredentialID != nil && box?.credentialReplays == 0
    }

    enum ReplayAction {
        /// The attempt is no longer the one in flight.
        case none
        /// Cancel `task` and wait for the refresh that replaces `credentialID`.
        case replay(cancel: (any TransportTask)?, replacing: String?)
    }

    /// The attempt is dropped to wait for a refreshed credential (a replay, not a retry).
    mutating func replayBegins(attempt: Int) -> ReplayAction {
        guard isCurrent(attempt), let record = box else { return .none }
        state = .awaitingCredential(replay: true)
        record.credentialReplays += 1
        defer { record.task = nil }
        return .replay(cancel: record.task, replacing: record.appliedCredentialID)
    }

    // MARK: - The response

    enum HeadAction {
        /// Not the current attempt.
        case ignore
        /// The ranged attempt's answer does not continue the kept bytes: cancel the task,
        /// discard the file, send `request` again (it carries no `Range` now, so it cannot loop).
        case restart(task: (any TransportTask)?, file: ResponseBodyFile?, request: URLRequest)
        /// The head is the attempt's response: `previous` is the body file so far, which it
        /// appends to when `keep` (a 206 continuing the kept bytes), else discards.
        case accept(previous: ResponseBodyFile?, keep: Bool)
    }

    /// A response head arrived for `attempt`.
    mutating func headArrived(_ response: HTTPResponseHead, attempt: Int, now: DispatchTime) -> HeadAction {
        guard isCurrentTransport(attempt, "head"), let flight = inFlight, let record = box else { return .ignore }
        if record.resumeOffset > 0, response.statusCode == 206 || response.statusCode == 416,
            !(response.statusCode == 206
                && Self.continues(response, offset: record.resumeOffset, validator: record.resumeValidator, total: keptTotal(record)))
        {
            state = .preparing  // the rest of this attempt is not listened to
            record.resumeOffset = 0
            record.resumeValidator = nil
            record.data = Data()
            record.bytesReceived = 0
            defer {
                record.task = nil
                record.bodyFile = nil
            }
            return .restart(task: record.task, file: record.bodyFile, request: currentRequest)
        }
        // A 206 that did not continue the kept bytes restarted above: one here continues them.
        let keep = record.resumeOffset > 0 && response.statusCode == 206
        record.response = response
        record.lastActivity = now
        if record.firstByteTime == nil { record.firstByteTime = now }
        if !keep {
            record.data = Data()
            record.bytesReceived = 0
        }
        record.resumeOffset = 0
        record.resumeValidator = nil
        state = .receiving(flight, .undecided)
        streamsBody = false
        defer { record.bodyFile = nil }
        return .accept(previous: record.bodyFile, keep: keep)
    }

    /// Where the accepted response's body goes: `file` (a download's), or the stream consumers
    /// when `streams`, else memory. False when `attempt` stopped being current after its head
    /// was accepted (a cancel in between): the caller removes `file`, which no finish will see.
    mutating func bodyRouted(to file: ResponseBodyFile?, streams: Bool, attempt: Int) -> Bool {
        guard isCurrentTransport(attempt, "bodyRouted"), let record = box else { return false }
        guard case .receiving = state else {
            impossible("bodyRouted before its head")
            return false
        }
        record.bodyFile = file
        streamsBody = file == nil && streams
        return true
    }

    /// The head is handled; `redirect` is the request it leads to when it is a redirect to
    /// follow once its body is read (that body goes to no hook), nil when it is the response.
    /// Returns the bytes held and the whole body's expected size.
    mutating func headDelivered(_ response: HTTPResponseHead, redirect: URLRequest?) -> (received: Int64, expected: Int64) {
        let record = self.record
        record.downloadExpected = Self.expectedTotal(of: response)
        record.pendingRedirect = redirect
        if case .receiving(let flight, .undecided) = state {
            state = .receiving(flight, redirect == nil ? .deliver : .follow)
        } else {
            impossible("headDelivered")
        }
        return (record.bytesReceived, record.downloadExpected)
    }

    /// The redirect the current attempt's head decided on, taken as the attempt completes: the
    /// state's route says whether there is one (`.follow`); the record holds only its target.
    mutating func takeRedirect() -> URLRequest? {
        guard case .receiving(_, .follow) = state, let record = box else { return nil }
        defer { record.pendingRedirect = nil }
        return record.pendingRedirect
    }

    /// What a chunk changed, for the operation to hand on outside the lock.
    struct ChunkUpdate {
        var file: ResponseBodyFile?
        var streams: Bool
        var received: Int64
        var expected: Int64
        var reports: Bool
    }

    enum ChunkAction {
        case ignore
        /// The body bound for memory passed `limit`: what was held is released; fail.
        case tooLarge(limit: Int64, response: HTTPResponseHead)
        case accept(ChunkUpdate)
    }

    /// A body chunk arrived for `attempt`; `limit` is the most a body kept in memory may have.
    mutating func chunkArrived(_ data: Data, attempt: Int, limit: Int64?, now: DispatchTime) -> ChunkAction {
        guard isCurrentTransport(attempt, "chunk"), let record = box else { return .ignore }
        // Transports hand on a head before its body, and a head the transfer did not accept
        // moved it out of this attempt.
        guard case .receiving(_, let route) = state else {
            impossible("chunk before its head")
            return .ignore
        }
        let count = Int64(data.count)
        let inMemory = record.bodyFile == nil && !streamsBody
        if inMemory, let limit, let response = record.response, Int64(record.data.count) + count > limit {
            record.data = Data()
            return .tooLarge(limit: limit, response: response)
        }
        if inMemory { record.data.append(data) }
        record.bytesReceived += count
        record.lastActivity = now
        let expected = record.response.map(Self.expectedTotal(of:)) ?? -1
        record.downloadExpected = expected
        return .accept(
            ChunkUpdate(
                file: record.bodyFile, streams: streamsBody, received: record.bytesReceived, expected: expected, reports: route == .deliver)
        )
    }

    /// Request body bytes went out for `attempt`; false when it is no longer current.
    mutating func bytesSent(_ bytes: Int64, expected: Int64, attempt: Int, now: DispatchTime) -> Bool {
        guard isCurrentTransport(attempt, "bytesSent"), let record = box else { return false }
        record.bytesSent += bytes
        record.lastActivity = now
        record.uploadExpected = expected
        return true
    }

    /// A redirect is followed.
    mutating func redirectFollowed() {
        guard !isFinishing else { return }
        record.redirectCount += 1
    }

    // MARK: - Backpressure

    /// `count` bytes went to the chunk block; returns whether the transfer should pause now
    /// (the blocks are `limit` bytes behind).
    mutating func chunkQueued(_ count: Int, limit: Int) -> Bool {
        guard !isFinishing else { return false }
        let record = self.record
        record.chunkBytesPending += count
        record.chunkBytesDelivered += Int64(count)
        guard !chunksPaused, record.chunkBytesPending >= limit else { return false }
        chunksPaused = true
        return true
    }

    /// The chunk block handled `count` bytes; returns whether to resume a transfer it paused
    /// (half the limit is left).
    mutating func chunkHandled(_ count: Int, limit: Int) -> Bool {
        guard let record = box else { return false }
        record.chunkBytesPending -= count
        guard chunksPaused, record.chunkBytesPending <= limit / 2 else { return false }
        chunksPaused = false
        return true
    }

    /// A consumer fell behind: returns the task to pause. Bytes can arrive before the task that
    /// carries them is stored (a loaded machine deschedules the sender while the transport's
    /// thread reads): the pause then waits here, and ``taskStarted(_:attempt:)`` applies it.
    mutating func pauseReceiving() -> (any TransportTask)? {
        guard !isFinishing else { return nil }
        if box?.task == nil {
            updateFlight { flight in
                if case .flowing = flight.demand { flight.demand = .pauseWhenTaskStarts }
                if case .pausedBeforeTask(caughtUp: true) = flight.demand { flight.demand = .pausedBeforeTask(caughtUp: false) }
            }
        }
        return box?.task
    }

    /// The consumer caught up: returns the task to resume (and drops a pause still waiting for it).
    mutating func resumeReceiving() -> (any TransportTask)? {
        updateFlight { flight in
            if case .pauseWhenTaskStarts = flight.demand { flight.demand = .flowing }
            if case .pausedBeforeTask(caughtUp: false) = flight.demand { flight.demand = .pausedBeforeTask(caughtUp: true) }
        }
        return box?.task
    }

    // MARK: - Failure and retry

    enum FailureAction {
        /// The completion is claimed already: nothing to do.
        case none
        /// Finish with the error now.
        case finish
        /// Stop `halt` and ask the retry policy, with the attempt count for its context.
        case askRetryPolicy(attemptCount: Int, halt: Halt)
    }

    /// An attempt failed. When the retry policy may see it (`retryable`, not a cancellation,
    /// attempts left), the attempt is dropped and its clocks stopped while the policy decides
    /// — a decision may wait for a person.
    mutating func attemptFailed(retryable: Bool, cancelled: Bool, maximumAttempts: Int) -> FailureAction {
        if isFinishing { return .none }
        guard retryable, !cancelled, lifecycle == .executing, retryCount + 1 < maximumAttempts else { return .finish }
        // A pause whose lifecycle has not moved yet stays a pause (and `retryScheduled` drops the decision).
        if mayBeginAttempt { state = .retrying(.deciding) }
        let record = self.record
        defer { record.task = nil }
        return .askRetryPolicy(attemptCount: record.retryCount + 1, halt: Halt(task: record.task, timers: record.takeTimers(), file: nil))
    }

    enum RetryAction {
        /// The transfer stopped, paused or moved on meanwhile: the decision is dropped.
        case none
        /// Close `file` (the kept bytes a ranged request continues), announce attempt
        /// `nextAttempt`, arm the back-off timer.
        case backOff(nextAttempt: Int, closing: ResponseBodyFile?)
    }

    /// The policy retries: counted, `request` (a `decide` block's) becomes the next one, and the
    /// bytes received are kept where a ranged request can continue them.
    mutating func retryScheduled(request: URLRequest?) -> RetryAction {
        guard case .retrying(.deciding) = state else { return .none }
        state = .retrying(.backingOff)
        let record = self.record
        record.retryCount += 1
        if let request { currentRequest = request }
        return .backOff(nextAttempt: record.retryCount + 1, closing: keepReceivedBytes())
    }

    /// The back-off timer was made; false when the operation stopped meanwhile (cancel it).
    mutating func retryTimerArmed(_ timer: DeadlineTimer) -> Bool {
        guard case .retrying(.backingOff) = state else { return false }
        record.retryTimer = timer
        return true
    }

    enum BackOffAction {
        /// The transfer stopped, paused or moved on meanwhile: a late fire.
        case none
        /// Arm fresh idle and resource timers and send `request`.
        case send(URLRequest)
    }

    /// The back-off is over.
    mutating func retryTimerFired() -> BackOffAction {
        guard case .retrying(.backingOff) = state, let record = box else { return .none }
        state = .preparing
        record.retryTimer = nil
        return .send(currentRequest)
    }

    /// The one decision whether received bytes can be continued with `Range`/`If-Range` (by a
    /// resume after a pause, or by a retry after a dropped connection): a GET whose 200 or 206
    /// brought some bytes and a validator `If-Range` accepts. Sets the resume point (or clears
    /// it) and returns the body file to close before the continuation; if closing fails,
    /// ``keptBytesLost()``.
    mutating func keepReceivedBytes() -> ResponseBodyFile? {
        let record = self.record
        if let response = record.response, response.statusCode == 200 || response.statusCode == 206, record.bytesReceived > 0,
            let validator = Self.validator(of: response), currentRequest.httpMethod ?? "GET" == "GET"
        {
            record.resumeOffset = record.bytesReceived
            record.resumeValidator = validator
        } else {
            record.resumeOffset = 0
            record.resumeValidator = nil
        }
        return record.bodyFile
    }

    /// The whole body's size the kept bytes belong to: from the response they came from, else
    /// (a download resumed from a saved state) the saved total; -1 when unknown.
    func keptTotal(_ record: TransferRecord) -> Int64 {
        record.response.map(Self.expectedTotal(of:)) ?? record.resumeTotal
    }

    // MARK: - Finish

    /// Claims the completion: the first caller gets what to stop and release; every later one
    /// (a transport completion racing a cancel or a timeout) gets nil.
    mutating func claimCompletion(_ result: Result<OneWayTransfer<Any?>, ConveyorError>, now: DispatchTime) -> (
        halt: Halt, secrets: [String]
    )? {
        guard !isFinishing else { return nil }
        state = .finished(Finished(lifecycle: lifecycle))
        let record = self.record
        switch result {
        case .success(let value): record.responseObject = value
        case .failure(let error): record.error = error
        }
        record.metrics = OperationMetrics(record: record, now: now)
        defer {
            record.task = nil
            record.pinnedSecrets = []
        }
        return (Halt(task: record.task, timers: record.takeTimers(), file: record.bodyFile), record.pinnedSecrets)
    }

    /// The completion block ran (or there was none): returns the waiters to call.
    mutating func completionRan() -> [@Sendable () -> Void] {
        // Only a claimed completion can have run: an early call must not tell drain it has.
        guard case .finished(var finished) = state else { return [] }
        finished.completionRan = true
        state = .finished(finished)
        let record = self.record
        defer { record.deliveryWaiters = [] }
        return record.deliveryWaiters
    }

    /// The client's event monitors heard the operation's finish (on their queue): later events
    /// of it are not delivered.
    mutating func monitorsHeardFinish() {
        guard case .finished(var finished) = state else { return }
        finished.monitorsHeard = true
        state = .finished(finished)
    }

    /// Whether the monitors heard the finish already.
    var monitorsHaveHeardFinish: Bool {
        if case .finished(let finished) = state { return finished.monitorsHeard }
        return false
    }

    /// Keeps `body` for when the completion block has run; false when it has (call it now).
    mutating func whenCompletionRuns(_ body: @escaping @Sendable () -> Void) -> Bool {
        if completionDelivered { return false }
        let record = self.record
        record.deliveryWaiters.append(body)
        return true
    }

    // MARK: - Progress

    /// The upload or download `Progress`, made with the current counts on first use.
    mutating func progress(upload: Bool) -> (progress: Progress, made: Bool, completed: Int64, expected: Int64) {
        let record = self.record
        if let existing = upload ? record.uploadProgressObject : record.downloadProgressObject { return (existing.value, false, 0, 0) }
        let progress = Progress(totalUnitCount: -1)
        if upload {
            record.uploadProgressObject = LockedReference(progress)
        } else {
            record.downloadProgressObject = LockedReference(progress)
        }
        return (
            progress, true, upload ? record.bytesSent : record.bytesReceived, upload ? record.uploadExpected : record.downloadExpected
        )
    }

    /// Bytes handed to the chunk block so far.
    var chunkBytesDelivered: Int64 { box?.chunkBytesDelivered ?? 0 }

    /// The `Progress` objects made so far.
    var uploadProgress: Progress? { box?.uploadProgressObject?.value }
    var downloadProgress: Progress? { box?.downloadProgressObject?.value }

    // MARK: - Ranges (RFC 9110 §14)

    /// Whether a 206 continues kept bytes: its `Content-Range` starts at `offset`, its total is
    /// the `total` the kept bytes belong to (when both are known), it runs to the end of that
    /// total (when one is known), its `Content-Length` is the range's length, and its validator of the kind sent in `If-Range` — the `ETag` for an
    /// entity tag, else `Last-Modified` — is `validator`. A 206 that leaves the validator out
    /// is not taken on trust: RFC 9110 §15.3.7 has a server send the `ETag` it would send with
    /// a 200, and one that does not cannot show its bytes belong to the kept ones.
    static func continues(_ response: HTTPResponseHead, offset: Int64, validator: String?, total: Int64) -> Bool {
        guard let range = HTTPGrammar.contentRange(response.value(forHTTPHeaderField: "Content-Range")), range.first == offset else {
            return false
        }
        if total >= 0, let sent = range.total, sent != total { return false }
        // The request asked for everything from `offset` on (`bytes=offset-`): a range that
        // stops before the end would be appended and reported as the whole body.
        if let end = range.total ?? (total >= 0 ? total : nil), range.last + 1 != end { return false }
        if let length = response.value(forHTTPHeaderField: "Content-Length").flatMap(HTTPGrammar.contentLength),
            length != range.last - range.first + 1
        {
            return false
        }
        guard let validator else { return true }
        let isEntityTag = validator.hasPrefix("\"") || validator.hasPrefix("W/")
        let sent = response.value(forHTTPHeaderField: isEntityTag ? "ETag" : "Last-Modified")
        return sent == validator
    }

    /// The whole body's expected size: `Content-Range`'s total for a 206, else `Content-Length`;
    /// -1 when unknown.
    static func expectedTotal(of response: HTTPResponseHead) -> Int64 {
        if response.statusCode == 206, let total = HTTPGrammar.contentRange(response.value(forHTTPHeaderField: "Content-Range"))?.total {
            return total
        }
        return response.expectedContentLength >= 0 ? response.expectedContentLength : -1
    }

    /// `ETag` if strong, else `Last-Modified`: the validators `If-Range` accepts (RFC 9110 §13.1.5).
    static func validator(of response: HTTPResponseHead) -> String? {
        if let etag = response.value(forHTTPHeaderField: "ETag"), !etag.hasPrefix("W/") { return etag }
        return response.value(forHTTPHeaderField: "Last-Modified")
    }
}

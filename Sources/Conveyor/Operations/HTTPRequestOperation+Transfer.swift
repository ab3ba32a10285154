import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// Sends one attempt: the first request, a redirect's target, a retry, a resume or a replay.
    func send(_ request: URLRequest) {
        assertOnExecutor()
        // The run's settings: its transport, cache, adapters and authenticator.
        let settings = mutableState.withLock { $0.transfer.mayBeginAttempt ? $0.settings : nil }
        guard let settings else { return }
        // An authenticator stamps every attempt, or makes it wait for a fresh credential.
        guard let request = settings.authenticator.map({ authenticated(request, by: $0) }) ?? request else { return }
        let adapters = settings.hooks?.requestAdapters ?? []
        guard let attempt = transfer({ $0.attemptBegins(request, now: .now(), adapting: !adapters.isEmpty) }) else { return }
        let cached = attempt.resumeOffset == 0 ? cacheOptions(attempt: attempt.number, settings: settings) : nil
        // A caller's body stream is read once (the transports read it as it goes; it cannot be
        // rewound): a redirect that keeps the body, a retry, a credential replay or a resume
        // after `pause()` would send what is left of it as if it were the whole body (found by
        // the independent attack: the server got 0 bytes, or the last 6 of 8 MB, and the
        // operation succeeded). Such an attempt fails instead, as URLSession fails a task whose
        // body stream it cannot get again. Send a body that may go twice as `Data` or a file.
        if attempt.repeatsSpentBodyStream {
            let error = URLError.bodyStreamExhausted("the request body stream was read by an earlier attempt and cannot be sent again")
            fail(.network(error), response: nil, retryable: false)
            return
        }
        guard !adapters.isEmpty else {
            transmit(request, attempt: attempt, settings: settings, cached: cached)
            return
        }
        // Whether the request goes to the client's credential origins, for the adapters.
        let credentialOrigin = settings.credentialScope?.contains(request.url) ?? false
        // The adapters are the caller's code, and may wait: they run off this thread, and the
        // attempt goes on only if it is still the one the operation waits for (a cancel, a pause
        // or a timeout meanwhile drops their answer).
        let context = RequestAdapterContext(operation: self, attempt: attempt.ordinal, isCredentialOrigin: credentialOrigin)
        let adapting = OneWayTransfer((request, cached))
        Task {
            let (request, cached) = adapting.value
            var adapted = request
            let outcome: Result<URLRequest, any Error>
            do {
                for adapter in adapters { adapted = try await adapter.adapt(adapted, context: context) }
                outcome = .success(adapted)
            } catch {
                outcome = .failure(error)
            }
            // The adapters' answer is an event of the transfer.
            let answer = OneWayTransfer((outcome, cached))
            settings.transport.executor.run { [self] in
                let (outcome, cached) = answer.value
                guard transfer({ $0.adapted(attempt: attempt.number) }) else { return }
                let checked = outcome.mapError { ConveyorError.requestAdaptationFailed(underlying: $0) }.flatMap {
                    checkedAdaptation(of: request, to: $0, redirectPolicy: settings.redirectPolicy)
                }
                switch checked {
                case .success(let checked): transmit(checked, attempt: attempt, settings: settings, cached: cached)
                case .failure(let error): fail(error, response: nil, retryable: false)
                }
            }
        }
    }

    /// What the adapters returned, made safe to send (both found by the independent attack): a
    /// request without an `http(s)` URL is ``ConveyorError/invalidURL(path:baseURL:)`` (corelibs
    /// URLSession traps on one without a URL); one moved to another origin loses the credential
    /// headers it carried unchanged from before (``RedirectPolicy/headersRemovedAcrossOrigins``,
    /// as for a redirect) — a header the adapter itself set is its own decision.
    private func checkedAdaptation(
        of original: URLRequest, to adapted: URLRequest, redirectPolicy: RedirectPolicy
    ) -> Result<URLRequest, ConveyorError> {
        guard let url = adapted.url, HTTPClient.isRequestURL(url) else {
            return .failure(.invalidURL(path: adapted.url?.absoluteString ?? "(no URL)", baseURL: nil))
        }
        guard !Origin.same(original.url, url) else { return .success(adapted) }
        var checked = adapted
        for name in redirectPolicy.headersRemovedAcrossOrigins {
            if let value = original.value(forHTTPHeaderField: name), adapted.value(forHTTPHeaderField: name) == value {
                checked.setHeader(nil, for: name)
            }
        }
        return .success(checked)
    }

    /// Checks the attempt's request and hands it to the transport (through the cache when it
    /// has one).
    private func transmit(
        _ request: URLRequest, attempt: TransferStateMachine.Attempt, settings: ResolvedSettings, cached: (HTTPCache, HTTPCacheOptions)?
    ) {
        let (transport, monitors) = (settings.transport, settings.hooks?.monitors)
        var request = request
        // The method reaches the request line as it is: anything but a token could inject
        // headers or smuggle a second request.
        if let method = request.httpMethod, !HTTPGrammar.isToken(method) {
            fail(.invalidMethod(method), response: nil, retryable: false)
            return
        }
        // One copy of the fields (corelibs builds a dictionary per read) serves both checks.
        let fields = request.allHTTPHeaderFields ?? [:]
        if let name = HTTPGrammar.firstInvalidFieldName(in: fields) {
            fail(.invalidHeader(name: name), response: nil, retryable: false)
            return
        }
        // Every credential value sent is masked by value in the text Conveyor emits, and held
        // (never forgotten) until the operation finishes.
        pinSecrets(SentSecrets.values(of: request, fields: fields))
        if attempt.resumeOffset > 0, let validator = attempt.resumeValidator {
            request.setHeader("bytes=\(attempt.resumeOffset)-", for: "Range")
            request.setHeader(validator, for: "If-Range")
        }
        // A file body goes to the transport as the file, with the length fixed when it was built.
        let bodyFile: BodyFile.Snapshot?
        do {
            bodyFile = try BodyFileStream.bodyFile(of: request, fields: fields)
        } catch {
            fail(error, response: nil, retryable: false)
            return
        }
        // Whether the attempt asks for a part: a 206 is then what it asked for, else an error.
        let asksForRange =
            (attempt.resumeOffset > 0 && attempt.resumeValidator != nil) || fields.keys.contains { $0.equalsIgnoringASCIICase("Range") }
        let delegate = AttemptDelegate(operation: self, attempt: attempt.number, asksForRange: asksForRange, settings: settings)
        // Told only when the request goes out as it is (the cache may still answer it): one the
        // transport refuses (a malformed proxy, say) fails with nothing sent, and a monitor
        // hears of no send (found by the review: willSend for 50 of 50 refused requests).
        if transport.refusal(for: request) == nil {
            monitors?.post(self) { [request] in $0.request(self, willSend: request, attempt: attempt.ordinal) }
            // The logger started with startLogging() writes its `→` line from this: what is sent.
            if attempt.ordinal == 1 {
                NotificationCenter.default.post(name: .conveyorOperationWillSend, object: self, userInfo: ["request": request])
            }
        }
        let task: any TransportTask
        // A ranged continuation of a partial body is not a cacheable exchange (no options above).
        if let (cache, options) = cached {
            task = cache.startTask(
                for: request, bodyFile: bodyFile, plan: settings.attemptPlan, transport: transport, delegate: delegate, options: options)
        } else {
            task = transport.startTask(for: request, bodyFile: bodyFile, plan: settings.attemptPlan, delegate: delegate)
        }
        // Cancelled, paused or timed out while the task was being created: stop it here.
        let action = transfer { $0.taskStarted(task, attempt: attempt.number) }
        if isCancelled { task.cancel() }
        switch action {
        case .none: break
        case .cancel: task.cancel()
        case .pause: task.pauseReceiving()
        case .resume: task.resumeReceiving()
        }
    }

    /// The cache and how this attempt uses it; nil without a cache.
    private func cacheOptions(attempt: Int, settings: ResolvedSettings) -> (HTTPCache, HTTPCacheOptions)? {
        guard let use = settings.cache else { return nil }
        let monitors = settings.hooks?.monitors
        let options = HTTPCacheOptions(
            policy: use.policy, responseHandler: use.responseHandler, isUnreachable: use.isUnreachable,
            reportSource: { [weak self] source in
                self?.transfer { $0.sourceReported(source, attempt: attempt) }
                if source != .network, let self { monitors?.post(self) { $0.request(self, wasAnsweredBy: source) } }
            })
        return (use.cache, options)
    }

    /// Runs `body` on the state if `attempt` is still the one the operation waits for.
    func ifCurrent<T>(_ attempt: Int, _ body: (inout MutableState) -> T) -> T? {
        mutableState.withLock { state in state.transfer.isCurrent(attempt) ? body(&state) : nil }
    }

    func attemptDidReceive(response: HTTPResponseHead, attempt: Int, asksForRange: Bool, settings: ResolvedSettings) {
        if replayAfterCredentialRefresh(response, attempt: attempt, authenticator: settings.authenticator) { return }
        let previous: ResponseBodyFile?
        let keep: Bool
        // One lock: the machine's answer, and where a body that is not kept in memory can go.
        let (answer, consumers) = mutableState.withLock { state in
            (
                state.transfer.headArrived(response, attempt: attempt, now: .now()),
                BodyConsumers(
                    sink: state.outputSink, channel: state.bodyChannel, chunked: state.chunkHandler != nil,
                    delivered: state.transfer.chunkBytesDelivered)
            )
        }
        switch answer {
        case .ignore: return
        case .restart(let task, let file, let request):
            // A ranged attempt's answer that does not continue the kept bytes (see
            // ``TransferStateMachine/continues(_:offset:validator:total:)``): the whole request again.
            task?.cancel()
            file?.discard()
            send(request)
            return
        case .accept(let file, let keeps):
            (previous, keep) = (file, keeps)
        }
        if response.statusCode == 206, !asksForRange {
            // A part answering a request for the whole (a server that ignores the missing
            // `Range`, or answers a resumed download's restart with a part again) is not the
            // resource: never a success, and nothing of it is kept.
            previous?.discard()
            fail(.partialContentNotRequested(response: response.urlResponse), response: response, retryable: false)
            return
        }
        if let length = response.value(forHTTPHeaderField: "Content-Length"), HTTPGrammar.contentLength(length) == nil {
            // RFC 9112 §6.3: differing or unparseable lengths make the message invalid — the
            // body's end cannot be known. Failing the transfer also closes its connection.
            previous?.discard()
            let reason = "the Content-Length \"\(length.prefix(64))\" is not one valid length (RFC 9112 §6.3)"
            fail(.network(URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: reason])), response: response, retryable: true)
            return
        }
        // Whether the head is a redirect to follow is decided here, once: the route of its body
        // and the hooks that hear of it follow from it (a hop the handler refuses is the
        // response, head and body).
        let redirect: URLRequest?
        do {
            redirect = try redirectRoute(after: response, settings: settings)
        } catch {
            previous?.discard()
            fail(error, response: response, retryable: false)
            return
        }
        let followsRedirect = redirect != nil
        if !keep { previous?.discard() }
        let file: ResponseBodyFile?
        let streams: Bool
        do {
            let stores = !followsRedirect && settings.acceptableStatusCodes.contains(response.statusCode)
            file = try makeBodyFile(for: response, appendingTo: keep ? previous?.url : nil, stores: stores)
            streams = try file == nil && stores && streamBody(of: response, continuing: keep, to: consumers)
        } catch {
            fail(
                error as? ConveyorError ?? .downloadFailed(reason: .cannotCreateFile(URL(fileURLWithPath: "/"), error)), response: response,
                retryable: false)
            return
        }
        // One lock: the body's route, the memory limit's check, and the head handed on.
        let delivery = mutableState.withLock { state -> Result<HeadDelivery, ConveyorError>? in
            // Cancelled (or superseded) since the head arrived: the file just made is nobody's.
            guard state.transfer.bodyRouted(to: file, streams: streams, attempt: attempt) else { return nil }
            // A body bound for memory that announces more than the limit fails before it is read.
            if file == nil, !streams, let limit = settings.maximumResponseSize, response.expectedContentLength > limit {
                return .failure(.responseTooLarge(limit: limit, response: response.urlResponse))
            }
            let (received, expected) = state.transfer.headDelivered(response, redirect: redirect)
            return .success(
                HeadDelivery(
                    progress: state.transfer.downloadProgress, received: received, expected: expected,
                    handler: followsRedirect ? nil : state.responseReceivedHandler, queue: settings.callbackQueue))
        }
        let head: HeadDelivery
        switch delivery {
        case .none:
            file?.discard()
            return
        case .failure(let error):
            fail(error, response: response, retryable: false)
            return
        case .success(let delivered): head = delivered
        }
        settings.hooks?.monitors?.post(self) { $0.request(self, didReceive: response) }
        if !followsRedirect { didReceive(response: response) }
        if let handler = head.handler { dispatchEvent(of: attempt, on: head.queue) { handler(self, response) } }
        if let progress = head.progress { updateProgress(progress, completed: head.received, expected: head.expected) }
    }

    /// Where a body that is not kept in memory can go, read with the machine's answer to a head.
    private struct BodyConsumers {
        var sink: OutputStreamSink?
        var channel: BodyChannel?
        var chunked: Bool
        /// Bytes the chunk block was given already.
        var delivered: Int64
    }

    /// What a delivered head tells the caller's blocks and the progress.
    private struct HeadDelivery {
        var progress: Progress?
        var received: Int64
        var expected: Int64
        var handler: ResponseHandler?
        var queue: DispatchQueue
    }

    /// Decides whether the body of a response the operation stores (an acceptable status, not a
    /// redirect to follow)
    /// goes to the output stream — error bodies stay in memory for the error, as for file
    /// downloads — and opens the stream for it. A body that starts over cannot go to a stream
    /// that holds bytes of an earlier one.
    private func streamBody(of response: HTTPResponseHead, continuing: Bool, to consumers: BodyConsumers) throws(ConveyorError) -> Bool {
        let (sink, channel) = (consumers.sink, consumers.channel)
        guard sink != nil || channel != nil || consumers.chunked else { return false }
        // Bytes a consumer was given cannot be taken back.
        let written = max(sink?.bytesWritten ?? 0, channel?.bytesPushed ?? 0, consumers.delivered)
        if !continuing, written > 0 { throw .outputStreamFailed(reason: .cannotRestart(bytesWritten: written)) }
        try sink?.open()
        channel?.deliver(head: response)
        return true
    }

    /// Hands a chunk to the chunk block on the callback queue, pausing the transfer while the
    /// blocks are more than ``HTTPStream/defaultBufferLimit`` bytes behind.
    private func deliverChunk(_ data: Data, attempt: Int, queue: DispatchQueue) {
        let limit = HTTPStream.defaultBufferLimit
        // Queued under the lock that claims the completion, as in ``dispatchEvent(of:on:_:)``.
        let pause = mutableState.withLock { state -> Bool in
            guard state.transfer.isCurrent(attempt), state.transfer.streamsBody, let handler = state.chunkHandler else { return false }
            queue.async { [self] in
                handler(self, data)
                // Caught up: an event of the transfer.
                if transfer({ $0.chunkHandled(data.count, limit: limit) }) { onExecutor { self.resumeReceiving() } }
            }
            return state.transfer.chunkQueued(data.count, limit: limit)
        }
        if pause { pauseReceiving() }
    }

    /// Queues `block` (a progress, head or chunk block) on `queue` unless the completion was
    /// claimed or `attempt` superseded meanwhile. Under the lock that claims the completion,
    /// which schedules its block after that: on a serial callback queue the completion block
    /// then runs after every block queued for the transfer's events, never before one of them.
    func dispatchEvent(of attempt: Int, on queue: DispatchQueue, _ block: @escaping @Sendable () -> Void) {
        mutableState.withLock { state in
            guard state.transfer.isCurrent(attempt) else { return }
            queue.async(execute: block)
        }
    }

    /// Pauses the current attempt's transfer for a consumer that fell behind (applied when the
    /// task is stored, if it is not yet: see ``TransferStateMachine/pauseReceiving()``).
    func pauseReceiving() {
        transfer { $0.pauseReceiving() }?.pauseReceiving()
    }

    /// Resumes what ``pauseReceiving()`` paused (or cancels a pause still waiting for the task).
    func resumeReceiving() {
        transfer { $0.resumeReceiving() }?.resumeReceiving()
    }

    func attemptDidReceive(data: Data, attempt: Int, settings: ResolvedSettings) {
        let outcome = mutableState.withLock { state in
            (
                state.transfer.chunkArrived(data, attempt: attempt, limit: settings.maximumResponseSize, now: .now()),
                state.outputSink, state.bodyChannel, state.chunkHandler != nil, state.downloadProgressHandler,
                state.transfer.downloadProgress
            )
        }
        let (action, outputSink, bodyChannel, hasChunkHandler, handler, progress) = outcome
        let update: TransferStateMachine.ChunkUpdate
        switch action {
        case .ignore: return
        case .tooLarge(let limit, let response):
            fail(.responseTooLarge(limit: limit, response: response.urlResponse), response: response, retryable: false)
            return
        case .accept(let accepted): update = accepted
        }
        // A consumer that falls behind by the channel's limit pauses the transfer; its pulls resume it.
        if update.streams, let bodyChannel, bodyChannel.push(data) { pauseReceiving() }
        if update.streams, hasChunkHandler { deliverChunk(data, attempt: attempt, queue: settings.callbackQueue) }
        do {
            try update.file?.write(data)
            if update.streams { try outputSink?.write(data) }
        } catch let error as ConveyorError {
            fail(error, response: nil, retryable: false)
            return
        } catch {
            fail(
                .downloadFailed(reason: .writeFailed(update.file?.url ?? URL(fileURLWithPath: "/"), error)), response: nil, retryable: false
            )
            return
        }
        if update.reports { didReceive(data: data) }
        if let progress { updateProgress(progress, completed: update.received, expected: update.expected) }
        if let handler {
            dispatchEvent(of: attempt, on: settings.callbackQueue) { handler(Int64(data.count), update.received, update.expected) }
        }
    }

    func attemptDidSend(bytes: Int64, total: Int64, expected: Int64, attempt: Int, settings: ResolvedSettings) {
        let update = mutableState.withLock { state in
            state.transfer.bytesSent(bytes, expected: expected, attempt: attempt, now: .now())
                ? (state.uploadProgressHandler, state.transfer.uploadProgress) : nil
        }
        guard let (handler, progress) = update else { return }
        if let progress { updateProgress(progress, completed: total, expected: expected) }
        if let handler { dispatchEvent(of: attempt, on: settings.callbackQueue) { handler(bytes, total, expected) } }
    }

    /// Moves a `Progress` forward without the values that trap in corelibs Foundation: a total
    /// below the completed count, and a total of 0 after a positive one (measured: 5 → 0
    /// traps in `_ProgressFraction._math`). A body larger than announced — a gzip body whose
    /// Content-Length is the compressed size — and an empty one make the progress indeterminate.
    func updateProgress(_ progress: Progress, completed: Int64, expected: Int64) {
        let total = expected > 0 && expected >= completed ? expected : -1
        if total >= 0, progress.completedUnitCount > total { progress.completedUnitCount = 0 }
        progress.totalUnitCount = total
        progress.completedUnitCount = completed
    }
}

import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Decides how to answer an authentication challenge. Whatever it returns, the challenge is
/// answered definitively: on Linux `.performDefaultHandling` would hang a 401 forever, so
/// Conveyor turns it into "use the operation's credential once, else cancel".
public typealias AuthenticationChallengeHandler =
    @Sendable (URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?)

/// The transport delegate of one attempt: events of a task the operation no longer waits for
/// (paused, cancelled, superseded by a retry) are dropped by attempt number.
final class AttemptDelegate: TransportTaskDelegate {
    let operation: HTTPRequestOperation
    let attempt: Int

    init(operation: HTTPRequestOperation, attempt: Int) {
        self.operation = operation
        self.attempt = attempt
    }

    func transportDidReceive(response: HTTPResponseHead) { operation.attemptDidReceive(response: response, attempt: attempt) }
    func transportDidReceive(data: Data) { operation.attemptDidReceive(data: data, attempt: attempt) }
    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        operation.attemptDidSend(bytes: bytes, total: totalBytesSent, expected: totalBytesExpectedToSend, attempt: attempt)
    }
    func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        operation.disposition(for: challenge)
    }
    func transportDidCollect(metrics: TransferMetrics) {
        operation.mutableState.withLock { state in
            if state.attempt == attempt { state.transferMetrics = metrics }
        }
    }
    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        operation.attemptDidComplete(response: response, error: error, attempt: attempt)
    }
    func transportAwaitsConnection() {
        operation.mutableState.withLock { state in
            if state.attempt == attempt { state.awaitsConnection = true }
        }
    }
    func transportDidLeaveConnectionQueue() {
        operation.mutableState.withLock { state in
            guard state.attempt == attempt, state.awaitsConnection else { return }
            state.awaitsConnection = false
            // The idle time starts now: the queue was not the transfer's silence.
            state.lastActivity = .now()
        }
    }
    var transportWantsPause: Bool {
        operation.mutableState.withLock { state in
            guard state.attempt == attempt, state.task == nil, state.pausesWhenTaskStarts else { return false }
            // The transfer pauses itself now; `send` resumes it if the consumer caught up meanwhile.
            state.pausedBeforeTask = true
            return true
        }
    }
}

extension HTTPRequestOperation {
    /// Sends one attempt: the first request, a redirect's target, a retry or a resume.
    func send(_ request: URLRequest) {
        let (live, authenticator) = mutableState.withLock { (!$0.completionClaimed && $0.state == .executing, $0.authenticator) }
        guard live else { return }
        // An authenticator stamps every attempt, or makes it wait for a fresh credential.
        guard var request = authenticator.map({ authenticated(request, by: $0) }) ?? request else { return }
        let (transport, attempt) = mutableState.withLock { state -> ((any Transport)?, Int) in
            guard !state.completionClaimed, state.state == .executing else { return (nil, 0) }
            state.attempt += 1
            state.pausesWhenTaskStarts = false
            state.pausedBeforeTask = false
            state.transferMetrics = nil
            state.currentRequest = request
            state.lastActivity = .now()
            state.awaitsConnection = false
            return (state.transport, state.attempt)
        }
        guard let transport else { return }
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
        let (offset, validator) = mutableState.withLock { ($0.resumeOffset, $0.resumeValidator) }
        if offset > 0, let validator {
            request.setHeader("bytes=\(offset)-", for: "Range")
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
        let delegate = AttemptDelegate(operation: self, attempt: attempt)
        let task: any TransportTask
        // A ranged continuation of a partial body is not a cacheable exchange.
        if offset == 0, let (cache, options) = cacheOptions(attempt: attempt) {
            task = cache.startTask(for: request, bodyFile: bodyFile, transport: transport, delegate: delegate, options: options)
        } else {
            task = transport.startTask(for: request, bodyFile: bodyFile, delegate: delegate)
        }
        let (current, pause, pausedByTransfer) = mutableState.withLock { state -> (Bool, Bool, Bool) in
            guard state.attempt == attempt, !state.completionClaimed else { return (false, false, false) }
            state.task = task
            defer {
                state.pausesWhenTaskStarts = false
                state.pausedBeforeTask = false
            }
            return (true, state.pausesWhenTaskStarts, state.pausedBeforeTask)
        }
        // Cancelled, paused or timed out while the task was being created: stop it here.
        if !current || isCancelled { task.cancel() }
        // A consumer fell behind before the task was stored (see pauseReceiving()) and is still
        // behind: pause. If the transfer paused itself for it and the consumer has caught up
        // since, nobody else would resume it.
        if current, pause {
            task.pauseReceiving()
        } else if current, pausedByTransfer {
            task.resumeReceiving()
        }
    }

    /// The cache and how this attempt uses it; nil without a cache.
    private func cacheOptions(attempt: Int) -> (HTTPCache, HTTPCacheOptions)? {
        mutableState.withLock { state -> (HTTPCache, HTTPCacheOptions)? in
            state.responseSource = .network
            guard let cache = state.cache else { return nil }
            let policy = state.cachePolicy ?? HTTPCache.Policy(request.cachePolicy) ?? state.defaultCachePolicy
            let options = HTTPCacheOptions(
                policy: policy, responseHandler: state.cacheResponseHandler,
                isUnreachable: { [weak client = state.adoptedClient] in client?.reachabilityStatus == .notReachable },
                reportSource: { [weak self] source in
                    self?.mutableState.withLock { if $0.attempt == attempt { $0.responseSource = source } }
                })
            return (cache, options)
        }
    }

    /// Runs `body` on the state if `attempt` is still the one the operation waits for.
    private func ifCurrent<T>(_ attempt: Int, _ body: (inout MutableState) -> T) -> T? {
        mutableState.withLock { state in
            guard state.attempt == attempt, !state.completionClaimed, state.state == .executing else { return nil }
            return body(&state)
        }
    }

    func attemptDidReceive(response: HTTPResponseHead, attempt: Int) {
        if replayAfterCredentialRefresh(response, attempt: attempt) { return }
        if restartUnlessContinued(by: response, attempt: attempt) { return }
        // A resumed transfer keeps its bytes only for a 206 that starts where they end.
        let outcome = ifCurrent(attempt) { state -> (previous: ResponseBodyFile?, keep: Bool) in
            let keep =
                state.resumeOffset > 0 && response.statusCode == 206
                && HTTPGrammar.contentRange(response.value(forHTTPHeaderField: "Content-Range"))?.first == state.resumeOffset
            state.response = response
            state.lastActivity = .now()
            if state.firstByteTime == nil { state.firstByteTime = .now() }
            if !keep {
                state.data = Data()
                state.bytesReceived = 0
            }
            state.resumeOffset = 0
            state.resumeValidator = nil
            defer { state.bodyFile = nil }
            return (state.bodyFile, keep)
        }
        guard let outcome else { return }
        if let length = response.value(forHTTPHeaderField: "Content-Length"), HTTPGrammar.contentLength(length) == nil {
            // RFC 9112 §6.3: differing or unparseable lengths make the message invalid — the
            // body's end cannot be known. Failing the transfer also closes its connection.
            outcome.previous?.discard()
            let reason = "the Content-Length \"\(length.prefix(64))\" is not one valid length (RFC 9112 §6.3)"
            fail(.network(URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: reason])), response: response, retryable: true)
            return
        }
        if !outcome.keep { outcome.previous?.discard() }
        do {
            let file = try makeBodyFile(for: response, appendingTo: outcome.keep ? outcome.previous?.url : nil)
            mutableState.withLock { $0.bodyFile = file }
            if file == nil { try streamBody(of: response, continuing: outcome.keep) }
            // A body bound for memory that announces more than the limit fails before it is read.
            let (limit, streams) = mutableState.withLock { ($0.maximumResponseSize, $0.streamsBody) }
            if file == nil, !streams, let limit, response.expectedContentLength > limit {
                fail(.responseTooLarge(limit: limit, response: response.urlResponse), response: response, retryable: false)
                return
            }
        } catch {
            fail(
                error as? ConveyorError ?? .downloadFailed(reason: .cannotCreateFile(URL(fileURLWithPath: "/"), error)), response: response,
                retryable: false)
            return
        }
        let followsRedirect = Self.redirectStatusCodes.contains(response.statusCode) && redirectPolicy.maximumRedirects > 0
        let (progress, received, expected, handler, queue) = mutableState.withLock { state in
            state.downloadExpected = Self.expectedTotal(of: response, offset: state.bytesReceived)
            state.reportsResponse = !followsRedirect
            return (
                state.downloadProgressObject?.value, state.bytesReceived, state.downloadExpected,
                followsRedirect ? nil : state.responseReceivedHandler, state.callbackQueue
            )
        }
        if !followsRedirect { didReceive(response: response) }
        if let handler { queue.async { handler(self, response) } }
        if let progress { updateProgress(progress, completed: received, expected: expected) }
    }

    /// A ranged attempt (a retry or a resume that sent `Range: bytes=<kept>-` with `If-Range`)
    /// keeps its bytes only for a 206 that continues them (see ``continues(_:offset:validator:total:)``).
    /// Any other 206 — starting elsewhere, without `Content-Range`, of another total or under
    /// another validator — and a 416 are not the rest of the body: the attempt is dropped, the
    /// kept bytes with it, and the whole request is sent again without `Range` (not a retry:
    /// it sends no `Range`, so it cannot loop). Returns whether it did.
    private func restartUnlessContinued(by response: HTTPResponseHead, attempt: Int) -> Bool {
        let claimed = mutableState.withLock { state -> (task: (any TransportTask)?, file: ResponseBodyFile?, request: URLRequest)? in
            guard state.attempt == attempt, !state.completionClaimed, state.state == .executing, state.resumeOffset > 0,
                response.statusCode == 206 || response.statusCode == 416
            else { return nil }
            // The total the kept bytes belong to, when the response they came from said it.
            // A download resumed from a saved state has no such response: the state's total.
            let total = state.response.map { Self.expectedTotal(of: $0, offset: 0) } ?? state.resumeTotal
            if response.statusCode == 206,
                Self.continues(response, offset: state.resumeOffset, validator: state.resumeValidator, total: total)
            {
                return nil
            }
            state.attempt += 1  // the rest of this attempt is not listened to
            state.resumeOffset = 0
            state.resumeValidator = nil
            state.data = Data()
            state.bytesReceived = 0
            defer {
                state.task = nil
                state.bodyFile = nil
            }
            return (state.task, state.bodyFile, state.currentRequest)
        }
        guard let claimed else { return false }
        claimed.task?.cancel()
        claimed.file?.discard()
        send(claimed.request)
        return true
    }

    /// Decides whether the body of `response` goes to the output stream — a final answer with
    /// an acceptable status (error bodies stay in memory for the error, as for file downloads)
    /// — and opens the stream for it. A body that starts over cannot go to a stream that holds
    /// bytes of an earlier one.
    private func streamBody(of response: HTTPResponseHead, continuing: Bool) throws(ConveyorError) {
        let (sink, channel, chunked) = mutableState.withLock { state -> (OutputStreamSink?, BodyChannel?, Bool) in
            state.streamsBody = false
            return (state.outputSink, state.bodyChannel, state.chunkHandler != nil)
        }
        guard sink != nil || channel != nil || chunked, storesBody(of: response) else { return }
        let written = sink?.bytesWritten ?? channel?.bytesPushed ?? 0
        if !continuing, written > 0 { throw .outputStreamFailed(reason: .cannotRestart(bytesWritten: written)) }
        try sink?.open()
        channel?.deliver(head: response)
        mutableState.withLock { $0.streamsBody = true }
    }

    /// Hands a chunk to the chunk block on the callback queue, pausing the transfer while the
    /// blocks are more than ``HTTPStream/defaultBufferLimit`` bytes behind.
    private func deliverChunk(_ data: Data) {
        let limit = HTTPStream.defaultBufferLimit
        let dispatch = mutableState.withLock { state -> (ChunkHandler, DispatchQueue, pause: Bool)? in
            guard state.streamsBody, let handler = state.chunkHandler else { return nil }
            state.chunkBytesPending += data.count
            let pause = !state.chunksPaused && state.chunkBytesPending >= limit
            if pause { state.chunksPaused = true }
            return (handler, state.callbackQueue, pause)
        }
        guard let (handler, queue, pause) = dispatch else { return }
        if pause { pauseReceiving() }
        queue.async { [self] in
            handler(self, data)
            let resume = mutableState.withLock { state -> Bool in
                state.chunkBytesPending -= data.count
                guard state.chunksPaused, state.chunkBytesPending <= limit / 2 else { return false }
                state.chunksPaused = false
                return true
            }
            if resume { resumeReceiving() }
        }
    }

    /// Pauses the current attempt's transfer for a consumer that fell behind. Body bytes can
    /// arrive before ``send(_:)`` has stored the task it started (a loaded machine deschedules
    /// the sender while the transport's thread reads 1 MB): the pause then waits in the state,
    /// and ``send(_:)`` applies it — under the same lock, so neither side misses the other.
    func pauseReceiving() {
        let task = mutableState.withLock { state -> (any TransportTask)? in
            if state.task == nil { state.pausesWhenTaskStarts = true }
            return state.task
        }
        task?.pauseReceiving()
    }

    /// Resumes what ``pauseReceiving()`` paused (or cancels a pause still waiting for the task).
    func resumeReceiving() {
        let task = mutableState.withLock { state -> (any TransportTask)? in
            state.pausesWhenTaskStarts = false
            return state.task
        }
        task?.resumeReceiving()
    }

    /// Whether `response` is the one whose body the operation delivers: its status is
    /// acceptable and it is not a redirect about to be followed.
    func storesBody(of response: HTTPResponseHead) -> Bool {
        acceptableStatusCodes.contains(response.statusCode)
            && (!Self.redirectStatusCodes.contains(response.statusCode) || redirectPolicy.maximumRedirects == 0)
    }

    func attemptDidReceive(data: Data, attempt: Int) {
        let tooLarge =
            ifCurrent(attempt) { state -> (Int64, HTTPResponseHead)? in
                guard state.bodyFile == nil, !state.streamsBody, let limit = state.maximumResponseSize, let response = state.response,
                    Int64(state.data.count) + Int64(data.count) > limit
                else { return nil }
                state.data = Data()  // release what was held; the operation fails now
                return (limit, response)
            } ?? nil
        if let (limit, response) = tooLarge {
            fail(.responseTooLarge(limit: limit, response: response.urlResponse), response: response, retryable: false)
            return
        }
        let update = ifCurrent(attempt) { state in
            if state.bodyFile == nil, !state.streamsBody { state.data.append(data) }
            state.bytesReceived += Int64(data.count)
            state.lastActivity = .now()
            let expected = state.response.map { Self.expectedTotal(of: $0, offset: state.bytesReceived - Int64(data.count)) } ?? -1
            state.downloadExpected = expected
            let channel = state.streamsBody ? state.bodyChannel : nil
            let chunked = state.streamsBody && state.chunkHandler != nil
            return (
                state.bodyFile, state.streamsBody ? state.outputSink : nil, channel, chunked,
                state.downloadProgressHandler, state.callbackQueue, state.bytesReceived, expected, state.downloadProgressObject?.value,
                state.reportsResponse
            )
        }
        guard let (file, sink, channel, chunked, handler, queue, total, expected, progress, reports) = update else { return }
        // A consumer that falls behind by the channel's limit pauses the transfer; its pulls resume it.
        if let channel, channel.push(data) { pauseReceiving() }
        if chunked { deliverChunk(data) }
        do {
            try file?.write(data)
            try sink?.write(data)
        } catch let error as ConveyorError {
            fail(error, response: nil, retryable: false)
            return
        } catch {
            fail(error as? ConveyorError ?? .downloadFailed(reason: .writeFailed(file!.url, error)), response: nil, retryable: false)
            return
        }
        if reports { didReceive(data: data) }
        if let progress { updateProgress(progress, completed: total, expected: expected) }
        if let handler { queue.async { handler(Int64(data.count), total, expected) } }
    }

    func attemptDidSend(bytes: Int64, total: Int64, expected: Int64, attempt: Int) {
        let update = ifCurrent(attempt) { state in
            state.bytesSent += bytes
            state.lastActivity = .now()
            state.uploadExpected = expected
            return (state.uploadProgressHandler, state.callbackQueue, state.uploadProgressObject?.value)
        }
        guard let (handler, queue, progress) = update else { return }
        if let progress { updateProgress(progress, completed: total, expected: expected) }
        if let handler { queue.async { handler(bytes, total, expected) } }
    }

    /// The answer to a challenge, for both transports; the credential it sends is registered
    /// for masking (`user:password`, its base64 and the password) and held until the operation
    /// finishes.
    func disposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let answer = chosenDisposition(for: challenge)
        if answer.0 == .useCredential, let credential = answer.1, let password = credential.password {
            pinSecrets(SentSecrets.basicParts(user: credential.user ?? "", password: password))
        }
        return answer
    }

    /// Pins `values` in ``SentSecrets`` for the rest of the operation (at once released again
    /// when it has finished meanwhile: nobody would unpin them).
    func pinSecrets(_ values: [String]) {
        guard !values.isEmpty else { return }
        SentSecrets.shared.pin(values)
        let kept = mutableState.withLock { state -> Bool in
            guard !state.completionClaimed else { return false }
            // The first attempt's values are kept as they are: no copy.
            if state.pinnedSecrets.isEmpty { state.pinnedSecrets = values } else { state.pinnedSecrets.append(contentsOf: values) }
            return true
        }
        if !kept { SentSecrets.shared.unpin(values) }
    }

    private func chosenDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let (handler, credential) = mutableState.withLock { ($0.challengeHandler, $0.credential.value) }
        if let handler {
            let (disposition, chosen) = handler(challenge)
            switch disposition {
            case .useCredential where chosen != nil:
                return Self.isSendable(chosen!, for: challenge) ? (.useCredential, chosen) : (.cancelAuthenticationChallenge, nil)
            case .cancelAuthenticationChallenge, .rejectProtectionSpace: return (.cancelAuthenticationChallenge, nil)
            default: break  // fall through to the operation's own credential
            }
        }
        // The operation's (or its client's default) credential belongs to the origin the
        // operation was made for: a challenge from elsewhere — after a redirect to another host
        // or port — never receives it.
        if challenge.previousFailureCount == 0, let credential, Origin.same(challenge.protectionSpace, request.url),
            Self.isSendable(credential, for: challenge)
        {
            return (.useCredential, credential)
        }
        return (.cancelAuthenticationChallenge, nil)
    }

    /// Whether `credential` can be sent without rewriting the `Authorization` header: no control
    /// characters in the user name or password (a CR/LF would inject a header into a Digest
    /// answer), and no `:` in a Basic user name (RFC 7617: it would split user and password anew).
    static func isSendable(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) -> Bool {
        let user = credential.user ?? ""
        let password = credential.password ?? ""
        let control = { (byte: UInt8) in byte < 0x20 || byte == 0x7F }
        if user.utf8.contains(where: control) || password.utf8.contains(where: control) { return false }
        let isBasic = challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodHTTPBasic
        return !(isBasic && user.contains(":"))
    }

    func attemptDidComplete(response: HTTPResponseHead?, error: (any Error)?, attempt: Int) {
        guard ifCurrent(attempt, { _ in true }) == true else { return }
        // URLSession ends a task whose challenge was refused with an error, the 401 only in its
        // response: the authenticator may still refresh and replay.
        if error != nil, let response, replayAfterCredentialRefresh(response, attempt: attempt) { return }
        if let error {
            fail(failure(for: error, response: response), response: response, retryable: true)
            return
        }
        guard let response else {
            fail(.network(URLError(.badServerResponse)), response: nil, retryable: true)
            return
        }
        do {
            if let next = try redirectRequest(after: response) {
                send(next)
                return
            }
        } catch let error as ConveyorError {
            fail(error, response: response, retryable: false)
            return
        } catch {
            fail(.network(URLError(.badServerResponse)), response: response, retryable: false)
            return
        }
        let inline = mutableState.withLock { state in
            state.bodyFile == nil && !state.streamsBody && state.data.count <= Self.inlineSerializationLimit
                && state.responseSerializer is any CheapSerialization
        }
        if inline {
            process(response, attempt: attempt)
        } else {
            conveyorProcessingQueue.async { self.process(response, attempt: attempt) }
        }
    }

    /// Bodies up to this size are serialized on the transport's thread by the built-in
    /// serializers (see `CheapSerialization`); larger ones on the processing queue, so a big
    /// JSON document never holds up the events of the client's other transfers.
    static let inlineSerializationLimit = 16 * 1024

    /// Validates and serializes the final response, off the callback queue (see
    /// ``ResponseSerializer`` for the order of the checks).
    func process(_ response: HTTPResponseHead, attempt: Int) {
        guard
            let (request, kept, sink, received, codes, types, serializer) = ifCurrent(
                attempt,
                {
                    (
                        $0.currentRequest, $0.data, $0.streamsBody ? $0.outputSink : nil, $0.bytesReceived, $0.acceptableStatusCodes,
                        $0.acceptableContentTypes ?? $0.responseSerializer.acceptableContentTypes, $0.responseSerializer
                    )
                })
        else { return }
        // A body written to the output stream is serialized from a memory stream's contents;
        // another stream's bytes are the caller's, and the value is the serializer's empty one.
        let data = sink.map { $0.memoryContents ?? Data() } ?? kept
        let body = data.isEmpty ? nil : data
        guard codes.contains(response.statusCode) else {
            fail(
                .unacceptableStatusCode(response.statusCode, response: response.urlResponse, data: body), response: response,
                retryable: true)
            return
        }
        let bodiless = received == 0 && (response.statusCode == 204 || response.statusCode == 205 || request.httpMethod == "HEAD")
        if received > 0, let types, !types.isEmpty, !ContentTypes.matches(response.mimeType, types) {
            finish(.failure(.unacceptableContentType(response.mimeType, acceptable: types, response: response.urlResponse, data: body)))
            return
        }
        if let sink, sink.memoryContents == nil {
            finish(.success(OneWayTransfer(try? serializer.emptyResponseValue(request: request, response: response))))
            return
        }
        do {
            let value = try serializeResponse(request: request, response: response, data: data, bodiless: bodiless, serializer: serializer)
            finish(.success(OneWayTransfer(value)))
        } catch let error as ConveyorError {
            finish(.failure(error))
        } catch {
            finish(.failure(.responseSerializationFailed(underlying: error, response: response.urlResponse, data: body)))
        }
    }

    /// Maps what the transport reported into the error the caller sees.
    private func failure(for error: any Error, response: HTTPResponseHead?) -> ConveyorError {
        if isCancelled { return .cancelled(reason: cancellationReason) }
        let data = mutableState.withLock { $0.data.isEmpty ? nil : $0.data }
        // A refused or failed challenge ends the task with an error but leaves the 401 (or
        // 407) in the task's response: that is an authentication failure, not a network one.
        if let response, response.statusCode == 401 || response.statusCode == 407 {
            return .authenticationFailed(response: response.urlResponse, data: data)
        }
        // Transports decide what their errors mean (CurlErrors, URLSessionErrors): a
        // ConveyorError, or a URLError in the shared vocabulary; only the operation's own
        // facts (its idle timeout, a challenge it answered) are added here.
        if let error = error as? ConveyorError { return error }
        if let urlError = error as? URLError {
            if urlError.code == .timedOut { return .timedOut(.idle, after: mutableState.withLock { $0.idleTimeout }) }
            if urlError.code == .userAuthenticationRequired || urlError.code == .userCancelledAuthentication {
                return .authenticationFailed(response: response?.urlResponse, data: data)
            }
            return .network(urlError)  // the transport mapped its codes (CurlErrors, URLSessionErrors)
        }
        return .network(URLError(.unknown, userInfo: [NSUnderlyingErrorKey: error as NSError]))
    }

    // MARK: - Ranges and progress

    /// Whether a 206 continues kept bytes: its `Content-Range` starts at `offset`, its total is
    /// the `total` the kept bytes belong to (when both are known), its `Content-Length` is the
    /// range's length, and its validator of the kind sent in `If-Range` — the `ETag` for an
    /// entity tag, else `Last-Modified` — is `validator`. A 206 that leaves the validator out
    /// is not taken on trust: RFC 9110 §15.3.7 has a server send the `ETag` it would send with
    /// a 200, and one that does not cannot show its bytes belong to the kept ones.
    static func continues(_ response: HTTPResponseHead, offset: Int64, validator: String?, total: Int64) -> Bool {
        guard let range = HTTPGrammar.contentRange(response.value(forHTTPHeaderField: "Content-Range")), range.first == offset else {
            return false
        }
        if total >= 0, let sent = range.total, sent != total { return false }
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

    /// The whole body's expected size: `Content-Range`'s total for a 206, else `offset` plus
    /// `Content-Length`; -1 when unknown.
    static func expectedTotal(of response: HTTPResponseHead, offset: Int64) -> Int64 {
        if response.statusCode == 206, let total = HTTPGrammar.contentRange(response.value(forHTTPHeaderField: "Content-Range"))?.total {
            return total
        }
        return response.expectedContentLength >= 0 ? response.expectedContentLength : -1
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

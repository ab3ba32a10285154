import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// Where an operation is in its lifecycle.
    ///
    /// `ready → executing → finished`, or `ready → finished` when cancelled before it started.
    /// `finished` is terminal. Cancellation is allowed from every state.
    public enum State: Sendable, Equatable {
        /// Created, not started.
        case ready
        /// Sending the request or receiving the response.
        case executing
        /// Completed, failed or cancelled; the completion block has been scheduled.
        case finished

        /// Whether the lifecycle allows moving from `self` to `next`.
        public func canTransition(to next: State) -> Bool {
            switch (self, next) {
            case (.ready, .executing), (.ready, .finished), (.executing, .finished): return true
            default: return false
            }
        }
    }

    /// The operation's lifecycle state.
    public var state: State { mutableState.withLock { $0.state } }

    /// Every mutable property of an operation, guarded together by `mutableState`.
    struct MutableState {
        var state: State = .ready
        var currentRequest: URLRequest
        var response: HTTPURLResponse?
        var data = Data()
        var error: ConveyorError?
        var responseObject: UncheckedSendableBox<Any?>?
        var success: Success?
        var failure: Failure?
        var callbackQueue: DispatchQueue = .conveyorDefaultCallbackQueue
        var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
        var acceptableContentTypes: Set<String>?
        var responseSerializer: any ResponseSerializer = DataResponseSerializer()
        var credential = UncheckedSendableBox<URLCredential?>(value: nil)
        var redirectPolicy: RedirectPolicy = .default
        var userInfo: [String: any Sendable] = [:]
        var transport: any Transport = URLSessionTransport.shared
        var task: (any TransportTask)?
        /// Set by the first caller of `finish`; every later caller does nothing.
        var completionClaimed = false
        var redirectCount = 0
        /// Dispatch sources are thread-safe; the box only tells the compiler so.
        var idleTimer: UncheckedSendableBox<any DispatchSourceTimer>?
        var lastActivity = DispatchTime.now()
        var startDate: Date?
        var startTime: DispatchTime?
        var firstByteTime: DispatchTime?
        var bytesSent: Int64 = 0
        /// Body bytes of the current response, in memory or in `bodyFile`.
        var bytesReceived: Int64 = 0
        /// Where the current response's body goes when not into `data` (file downloads).
        var bodyFile: ResponseBodyFile?
        var uploadProgress: ProgressHandler?
        var downloadProgress: ProgressHandler?
        var metrics: OperationMetrics?
        /// A request that could not be built: the operation fails with this as soon as it starts.
        var preflightError: ConveyorError?
    }

    // MARK: - Lifecycle

    /// Runs `start()`: the queue calls it once.
    func beginExecution() {
        guard mutableState.withLock({ $0.state == .ready }) else { return }
        if isCancelled {
            finish(.failure(.cancelled(reason: .explicit)))
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
        transition(to: .executing)
        NotificationCenter.default.post(name: .conveyorOperationDidStart, object: self)
        armIdleTimer()
        send(request)
    }

    /// Runs `cancel()` after `Operation` recorded it.
    func finishIfCancelledWhileExecuting() {
        // A ready operation finishes when its queue starts it (a cancelled operation is ready
        // at once); an executing one finishes now, so the caller is never kept waiting on the
        // transport.
        if mutableState.withLock({ $0.state == .executing }) {
            finish(.failure(.cancelled(reason: .explicit)))
        }
    }

    /// The one place the state changes and the queue is told about it through KVO:
    /// corelibs `OperationQueue` learns an asynchronous operation finished only from
    /// `didChangeValue(forKey: "isFinished")`.
    private func transition(to next: State) {
        let current = mutableState.withLock { $0.state }
        guard current.canTransition(to: next) else { return }
        var keys: [String] = []
        if current == .executing || next == .executing { keys.append("isExecuting") }
        if next == .finished { keys.append("isFinished") }
        keys.forEach { willChangeValue(forKey: $0) }
        mutableState.withLock { $0.state = next }
        keys.reversed().forEach { didChangeValue(forKey: $0) }
    }

    /// Ends the operation with `result`. The first call wins; later ones (a transport
    /// completion racing a cancel or a timeout) do nothing.
    func finish(_ result: Result<UncheckedSendableBox<Any?>, ConveyorError>) {
        let claimed = mutableState.withLock { state -> (task: (any TransportTask)?, timer: UncheckedSendableBox<any DispatchSourceTimer>?)? in
            guard !state.completionClaimed else { return nil }
            state.completionClaimed = true
            switch result {
            case let .success(value): state.responseObject = value
            case let .failure(error): state.error = error
            }
            state.metrics = OperationMetrics(state: state)
            defer {
                state.task = nil
                state.idleTimer = nil
            }
            return (state.task, state.idleTimer)
        }
        guard let claimed else { return }
        claimed.timer?.value.cancel()
        if case .failure = result { claimed.task?.cancel() }
        // A multipart body file Conveyor wrote is removed however the operation ended, and so
        // is a partial download that did not succeed.
        UploadBodyFiles.shared.finish(request)
        if case .failure = result { mutableState.withLock { $0.bodyFile }?.discard() }
        transition(to: .finished)
        NotificationCenter.default.post(name: .conveyorOperationDidFinish, object: self)

        let (queue, success, failure) = mutableState.withLock { state in
            defer {
                // Release the blocks so an operation captured by its own blocks is not leaked.
                state.success = nil
                state.failure = nil
            }
            return (state.callbackQueue, state.success, state.failure)
        }
        switch result {
        case let .success(value):
            if let success { queue.async { success(self, value.value) } }
        case let .failure(error):
            if let failure { queue.async { failure(self, error) } }
        }
    }

    // MARK: - Transfer

    /// Sends one attempt: the first request or a redirect's target.
    private func send(_ request: URLRequest) {
        let transport = mutableState.withLock { state in
            state.currentRequest = request
            state.response = nil
            state.data = Data()
            state.bytesReceived = 0
            state.lastActivity = .now()
            return state.transport
        }
        let task = transport.startTask(for: request, bodyFile: UploadBodyFiles.shared.entry(for: request).flatMap { $0.uploadsFromFile ? $0.file : nil }, delegate: self)
        let stillWanted = mutableState.withLock { state -> Bool in
            guard !state.completionClaimed else { return false }
            state.task = task
            return true
        }
        // Cancelled (or timed out) while the task was being created: stop it here.
        if !stillWanted || isCancelled { task.cancel() }
    }

    private func armIdleTimer() {
        let interval = request.timeoutInterval
        guard interval > 0, interval.isFinite else { return }
        let timer = DispatchSource.makeTimerSource(queue: conveyorTimerQueue)
        timer.setEventHandler { [weak self] in self?.idleTimerFired(interval: interval) }
        mutableState.withLock { $0.idleTimer = UncheckedSendableBox(value: timer) }
        timer.schedule(deadline: .now() + interval)
        timer.resume()
    }

    /// Idle means no byte moved for `interval`. Rather than rescheduling on every chunk, the
    /// timer wakes at the earliest possible deadline and re-arms from the last activity.
    private func idleTimerFired(interval: TimeInterval) {
        let (timer, remaining) = mutableState.withLock { state -> (UncheckedSendableBox<any DispatchSourceTimer>?, Double) in
            let idle = Double(DispatchTime.now().uptimeNanoseconds - state.lastActivity.uptimeNanoseconds) / 1e9
            return (state.idleTimer, interval - idle)
        }
        guard let timer else { return }
        if remaining > 0.001 {
            timer.value.schedule(deadline: .now() + remaining)
        } else {
            finish(.failure(.timedOut(.idle, after: interval)))
        }
    }

    /// Validates and serializes the final response, off the callback queue (see
    /// ``ResponseSerializer`` for the order of the checks).
    private func process(_ response: HTTPURLResponse) {
        let (request, data, received, codes, types, serializer) = mutableState.withLock {
            ($0.currentRequest, $0.data, $0.bytesReceived, $0.acceptableStatusCodes,
             $0.acceptableContentTypes ?? $0.responseSerializer.acceptableContentTypes, $0.responseSerializer)
        }
        let body = data.isEmpty ? nil : data
        guard codes.contains(response.statusCode) else {
            finish(.failure(.unacceptableStatusCode(response.statusCode, response: response, data: body)))
            return
        }
        let bodiless = received == 0 && (response.statusCode == 204 || response.statusCode == 205 || request.httpMethod == "HEAD")
        if received > 0, let types, !types.isEmpty, !ContentTypes.matches(response.contentMIMEType, types) {
            finish(.failure(.unacceptableContentType(response.contentMIMEType, acceptable: types, response: response, data: body)))
            return
        }
        do {
            let value = try serializeResponse(request: request, response: response, data: data, bodiless: bodiless, serializer: serializer)
            finish(.success(UncheckedSendableBox(value: value)))
        } catch let error as ConveyorError {
            finish(.failure(error))
        } catch {
            finish(.failure(.responseSerializationFailed(underlying: error, response: response, data: body)))
        }
    }

    /// Maps what the transport reported into the error the caller sees.
    private func failure(for error: any Error, response: HTTPURLResponse?) -> ConveyorError {
        if isCancelled { return .cancelled(reason: .explicit) }
        let data = mutableState.withLock { $0.data.isEmpty ? nil : $0.data }
        // A refused or failed challenge ends the task with an error but leaves the 401 (or
        // 407) in the task's response: that is an authentication failure, not a network one.
        if let response, response.statusCode == 401 || response.statusCode == 407 {
            return .authenticationFailed(response: response, data: data)
        }
        if let error = error as? ConveyorError { return error }
        if let urlError = error as? URLError {
            if urlError.code == .timedOut { return .timedOut(.idle, after: request.timeoutInterval) }
            if urlError.code == .userAuthenticationRequired || urlError.code == .userCancelledAuthentication {
                return .authenticationFailed(response: response, data: data)
            }
            return .network(urlError)
        }
        return .network(URLError(.unknown, userInfo: [NSUnderlyingErrorKey: error as NSError]))
    }
}

extension HTTPRequestOperation: TransportTaskDelegate {
    func transportDidReceive(response: HTTPURLResponse) {
        let previous = mutableState.withLock { state in
            state.response = response
            state.lastActivity = .now()
            if state.firstByteTime == nil { state.firstByteTime = .now() }
            defer { state.bodyFile = nil }
            return state.bodyFile
        }
        previous?.discard()
        do {
            let file = try makeBodyFile(for: response)
            mutableState.withLock { $0.bodyFile = file }
        } catch {
            finish(.failure(error as? ConveyorError ?? .downloadFailed(reason: .cannotCreateFile(URL(fileURLWithPath: "/"), error))))
        }
    }

    func transportDidReceive(data: Data) {
        let (file, handler, queue, total, expected) = mutableState.withLock { state in
            if state.bodyFile == nil { state.data.append(data) }
            state.bytesReceived += Int64(data.count)
            state.lastActivity = .now()
            return (state.bodyFile, state.downloadProgress, state.callbackQueue, state.bytesReceived, state.response?.expectedContentLength ?? -1)
        }
        do {
            try file?.write(data)
        } catch {
            finish(.failure(error as? ConveyorError ?? .downloadFailed(reason: .writeFailed(file!.url, error))))
            return
        }
        if let handler { queue.async { handler(Int64(data.count), total, expected) } }
    }

    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        let (handler, queue) = mutableState.withLock { state in
            state.bytesSent += bytes
            state.lastActivity = .now()
            return (state.uploadProgress, state.callbackQueue)
        }
        if let handler { queue.async { handler(bytes, totalBytesSent, totalBytesExpectedToSend) } }
    }

    func transportCredential(for challenge: URLAuthenticationChallenge) -> URLCredential? {
        mutableState.withLock { $0.credential.value }
    }

    func transportDidComplete(response: HTTPURLResponse?, error: (any Error)?) {
        if let error {
            finish(.failure(failure(for: error, response: response)))
            return
        }
        guard let response else {
            finish(.failure(.network(URLError(.badServerResponse))))
            return
        }
        do {
            if let next = try redirectRequest(after: response) {
                send(next)
                return
            }
        } catch let error as ConveyorError {
            finish(.failure(error))
            return
        } catch {
            finish(.failure(.network(URLError(.badServerResponse))))
            return
        }
        conveyorProcessingQueue.async { self.process(response) }
    }
}

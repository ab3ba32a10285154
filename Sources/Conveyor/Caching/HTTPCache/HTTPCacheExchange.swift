import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an operation tells the cache about one attempt.
struct HTTPCacheOptions: Sendable {
    var policy: HTTPCache.Policy
    var responseHandler: CacheResponseHandler?
    /// Whether the client's host is known to be unreachable now.
    var isUnreachable: @Sendable () -> Bool
    /// Told where the response the operation is about to see came from.
    var reportSource: @Sendable (HTTPCache.ResponseSource) -> Void
}

/// Inspects, changes or refuses (returns nil) a response about to be stored in the cache.
public typealias CacheResponseHandler = @Sendable (CachedResponse) -> CachedResponse?

extension HTTPCache {
    /// Starts one attempt through the cache: answers it from a stored entry, sends it as a
    /// conditional request, or sends it as is — storing or invalidating on the way back.
    func startTask(
        for request: URLRequest, bodyFile: BodyFile.Snapshot?, plan: AttemptPlan, transport: any Transport,
        delegate: any TransportTaskDelegate, options: HTTPCacheOptions
    ) -> any TransportTask {
        let method = (request.httpMethod ?? "GET").uppercased()
        guard method == "GET" || method == "HEAD" else {
            let exchange = HTTPCacheExchange(cache: self, request: request, inner: delegate, options: options, mode: .invalidate)
            return transport.startTask(for: request, bodyFile: bodyFile, plan: plan, delegate: exchange)
        }
        // Decide on the request as sent: the transport would add the stored cookies, which
        // `Vary: Cookie` (and so the choice of a stored response) depends on.
        var request = request
        let stampedSecrets: [String]
        do {
            stampedSecrets = try transport.cookies.stamp(&request)
        } catch {
            return RefusedTransportTask.refusing(error, delegate: delegate, on: transport.executor)
        }
        // The stamped values are the cache's to hold (the transport sees a request with its
        // cookies set, and stamps none), until the attempt ends however it is answered.
        let release = AttemptRelease()
        release.pin(stampedSecrets)
        let requestControl = Self.requestControl(of: request)
        var entry = options.policy == .reloadIgnoringCache || requestControl.contains("no-store") ? nil : cachedResponse(for: request)
        // A stored part answers only a Range request inside it, as that range; for anything else it is a miss.
        if let stored = entry, stored.statusCode == 206 { entry = stored.partialContent(for: request) }
        let offline = options.policy == .returnCacheDataWhenUnreachable
        let protocolRules = options.policy == .useProtocolCachePolicy || offline

        // `only-if-cached` (§5.2.1.7): a stored response that may answer, or a 504; never the network.
        if protocolRules, requestControl.contains("only-if-cached") {
            if let entry, canAnswer(request, with: entry) || (offline && options.isUnreachable()) {
                return CachedTask.deliver(
                    entry.notModified(for: request) ?? entry, to: delegate, options: options, release: release, on: transport.executor)
            }
            return CachedTask.deliverGatewayTimeout(for: request, to: delegate, release: release, on: transport.executor)
        }

        // Answered from the cache: always for cache-only (a miss fails), any entry for
        // "else load" and for offline while unreachable, a fresh one otherwise.
        let fromCache =
            switch options.policy {
            case .returnCacheDontLoad: true
            case .returnCacheElseLoad: entry != nil
            case .returnCacheDataWhenUnreachable where entry != nil && options.isUnreachable(): true
            default: entry.map { canAnswer(request, with: $0) } ?? false
            }
        // The caller's own condition, when false, gets a 304 (§4.3.2); a `Range` request a stored
        // complete response can answer gets its 206 from the cache.
        if fromCache {
            let answer = entry.map { $0.notModified(for: request) ?? $0.partialContent(for: request) ?? $0 }
            return CachedTask.deliver(answer, to: delegate, options: options, release: release, on: transport.executor)
        }
        // `stale-while-revalidate` (RFC 5861 §3): the stale entry answers now, and one
        // revalidation in the background updates it.
        if protocolRules, let entry, canAnswerWhileRevalidating(request, with: entry) {
            revalidateInBackground(entry, request: request, plan: plan, transport: transport, options: options)
            return CachedTask.deliver(
                entry.notModified(for: request) ?? entry, to: delegate, options: options, release: release, on: transport.executor)
        }
        let (sent, revalidating) = conditionalRequest(for: request, entry: entry)
        // The caller's own condition goes to the server as it is, and the server's 304 to the
        // caller; it also freshens the stored response it describes (§4.3.4).
        let freshening = revalidating == nil && entry?.statusCode == 200 && Self.isConditional(request) ? entry : nil
        // A stale entry answers instead of a 500, 502, 503 or 504 when `stale-if-error` allows it;
        // what answers a failed connection is decided by one rule.
        let staleIfError = entry.flatMap { protocolRules && canAnswerAfterError(request, with: $0) ? $0 : nil }
        let exchange = HTTPCacheExchange(
            cache: self, request: sent, inner: delegate, options: options,
            mode: .load(
                revalidating: revalidating, whenDisconnected: answerWhenDisconnected(request, with: entry, policy: options.policy),
                staleIfError: staleIfError, freshening: freshening),
            release: release)
        return transport.startTask(for: sent, bodyFile: bodyFile, plan: plan, delegate: exchange)
    }

    /// `request` made conditional on `entry`'s validators (§4.3.1), sent exactly as received
    /// (a weak or unquoted `ETag` included); unchanged when the caller sent conditions of its
    /// own or the entry has no validators.
    func conditionalRequest(for request: URLRequest, entry: CachedResponse?) -> (URLRequest, revalidating: CachedResponse?) {
        let method = (request.httpMethod ?? "GET").uppercased()
        guard let entry, !Self.isConditional(request), !entry.conditionalHeaders.isEmpty, entry.statusCode == 200 || method == "HEAD" else {
            return (request, nil)
        }
        var sent = request
        for (name, value) in entry.conditionalHeaders { sent.setHeader(value, for: name) }
        return (sent, entry)
    }

    /// Whether the caller sent a condition of its own that the cache evaluates (§4.3.2).
    static func isConditional(_ request: URLRequest) -> Bool {
        request.value(forHTTPHeaderField: "If-None-Match") != nil || request.value(forHTTPHeaderField: "If-Modified-Since") != nil
    }

    /// Revalidates `entry` without a caller waiting: one at a time per stored response; the
    /// result (a 304 refreshing it, or a new response) is stored as usual.
    func revalidateInBackground(
        _ entry: CachedResponse, request: URLRequest, plan: AttemptPlan, transport: any Transport, options: HTTPCacheOptions
    ) {
        let key =
            entry.key + "\n" + entry.varyingRequestHeaders.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        guard backgroundRevalidations.withLock({ $0.insert(key).inserted }) else { return }
        let (sent, revalidating) = conditionalRequest(for: request, entry: entry)
        var quiet = options
        quiet.reportSource = { _ in }
        let finished = BackgroundRevalidation(transport: transport) { [weak self] in
            _ = self?.backgroundRevalidations.withLock { $0.remove(key) }
        }
        let exchange = HTTPCacheExchange(
            cache: self, request: sent, inner: finished, options: quiet,
            mode: .load(revalidating: revalidating, whenDisconnected: .transportError, staleIfError: nil, freshening: nil))
        finished.hold(transport.startTask(for: sent, bodyFile: nil, plan: plan, delegate: exchange))
    }
}

/// The delegate of a background revalidation: nobody waits for its events. It keeps the task and
/// its transport alive until the exchange completes, then lets go.
final class BackgroundRevalidation: TransportTaskDelegate, Sendable {
    // Sendable: the mutable state is behind one Lock.
    private let held: Lock<(task: (any TransportTask)?, transport: (any Transport)?, done: (@Sendable () -> Void)?)>

    init(transport: any Transport, done: @escaping @Sendable () -> Void) {
        held = Lock((nil, transport, done))
    }

    func hold(_ task: any TransportTask) {
        held.withLock { if $0.transport != nil { $0.task = task } }
    }

    func transportDidReceive(response: HTTPResponseHead) {}
    func transportDidReceive(data: Data) {}
    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
    func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        (.cancelAuthenticationChallenge, nil)
    }
    // A background revalidation has no operation, no timers and no consumer: nothing to tell.
    func transportDidCollect(metrics: TransferMetrics) {}
    var transportWantsPause: Bool { false }
    func transportAwaitsConnection() {}
    func transportDidLeaveConnectionQueue() {}
    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        let done = held.withLock { held -> (@Sendable () -> Void)? in
            defer { held = (nil, nil, nil) }
            return held.done
        }
        done?()
    }
}

/// Sits between a transport and an operation's delegate for one attempt: turns a 304 into
/// the stored response, buffers a storable body and stores it, falls back to a stored entry
/// when the network fails (offline policy), and invalidates after unsafe methods.
final class HTTPCacheExchange: TransportTaskDelegate, Sendable {
    // Sendable, checked by the compiler: the mutable state is `state`, behind one Mutex; the rest
    // is immutable.

    enum Mode {
        case invalidate
        /// `whenDisconnected` answers when the connection fails before any response byte
        /// (``HTTPCache/answerWhenDisconnected(_:with:policy:)``); `staleIfError` when the server
        /// answers 500, 502, 503 or 504; `freshening` is the stored response a 304 to the caller's
        /// own conditional request updates when it describes it (the 304 itself goes to the caller).
        case load(
            revalidating: CachedResponse?, whenDisconnected: HTTPCache.DisconnectedAnswer, staleIfError: CachedResponse?,
            freshening: CachedResponse?)
    }

    private struct State {
        /// Whether the transport answered a challenge with a credential: the request as sent
        /// carried `Authorization`.
        var authenticated = false
        var notModified: CachedResponse?
        var buffer: Data?
        var response: HTTPResponseHead?
    }

    private let cache: HTTPCache
    private let request: URLRequest
    private let inner: any TransportTaskDelegate
    private let options: HTTPCacheOptions
    private let mode: Mode
    /// What the cache holds for the attempt (the values of the cookies it stamped), let go of
    /// as the exchange completes.
    private let release: AttemptRelease
    private let requestDate = Date()
    private let state = Lock(State())

    init(
        cache: HTTPCache, request: URLRequest, inner: any TransportTaskDelegate, options: HTTPCacheOptions, mode: Mode,
        release: AttemptRelease = AttemptRelease()
    ) {
        self.cache = cache
        self.request = request
        self.inner = inner
        self.options = options
        self.mode = mode
        self.release = release
    }

    func transportDidReceive(response: HTTPResponseHead) {
        guard case .load(let revalidating, _, let staleIfError, let freshening) = mode else {
            // A POST response that describes its own URL is kept for a later GET (RFC 9111 §4).
            let authenticated = state.withLock { $0.authenticated }
            if cache.canStoreAsGET(response, toPOST: request, authenticated: authenticated),
                response.expectedContentLength < 0 || response.expectedContentLength <= Int64(cache.maximumEntrySize)
            {
                state.withLock {
                    $0.buffer = Data()
                    $0.response = response
                }
            }
            inner.transportDidReceive(response: response)
            return
        }
        // An error answer that `stale-if-error` covers: the stored response instead (not stored).
        if let staleIfError, HTTPCache.errorStatusCodes.contains(response.statusCode), let head = staleIfError.httpResponse() {
            state.withLock { $0.notModified = staleIfError }
            options.reportSource(.staleOnError)
            inner.transportDidReceive(response: head)
            return
        }
        if response.statusCode == 304, let revalidating {
            // A 304 whose validator is not the stored one's updates nothing (§4.3.4): the server
            // evaluated the stored validator and said "not modified", so the stored response
            // answers this request as it is, neither relabelled nor made fresh (the attack on
            // issue 58: a 304 with another tag relabelled the stored body and kept it fresh for an
            // hour). A 304 with no validator at all still answers the validator this request sent
            // (servers that omit it are common), and refreshes as before.
            let carriesValidator =
                response.value(forHTTPHeaderField: "ETag") != nil || response.value(forHTTPHeaderField: "Last-Modified") != nil
            let refreshes = !carriesValidator || revalidating.isDescribed(by: response)
            let answer = refreshes ? revalidating.refreshed(with: response, requestDate: requestDate, responseDate: Date()) : revalidating
            if let head = answer.httpResponse() {
                // A HEAD revalidated against a stored GET must not replace the GET's body.
                if refreshes, revalidating.method == (request.httpMethod ?? "GET").uppercased() { cache.store(answer) }
                state.withLock { $0.notModified = answer }
                options.reportSource(.revalidatedCache)
                inner.transportDidReceive(response: head)
                return
            }
        }
        if response.statusCode == 304, let freshening, freshening.method == (request.httpMethod ?? "GET").uppercased(),
            freshening.isDescribed(by: response)
        {
            cache.store(freshening.refreshed(with: response, requestDate: requestDate, responseDate: Date()))
        }
        let authenticated = state.withLock { $0.authenticated }
        let storable =
            cache.canStore(response, for: request, authenticated: authenticated)
            && (response.expectedContentLength < 0 || response.expectedContentLength <= Int64(cache.maximumEntrySize))
        state.withLock {
            $0.buffer = storable ? Data() : nil
            $0.response = response
        }
        // §4.3.5: a HEAD response freshens the stored GET response it describes.
        if (request.httpMethod ?? "GET").uppercased() == "HEAD", response.statusCode == 200 {
            cache.freshenStoredGET(with: response, for: request, requestDate: requestDate)
        }
        inner.transportDidReceive(response: response)
    }

    func transportDidReceive(data: Data) {
        let forward = state.withLock { state -> Bool in
            if state.notModified != nil { return false }
            if state.buffer != nil {
                // Too large to keep: stop holding it and let it stream through.
                if state.buffer!.count + data.count > cache.maximumEntrySize { state.buffer = nil } else { state.buffer!.append(data) }
            }
            return true
        }
        if forward { inner.transportDidReceive(data: data) }
    }

    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        inner.transportDidSend(bytes: bytes, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
    }

    func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let answer = inner.transportDisposition(for: challenge)
        if answer.0 == .useCredential { state.withLock { $0.authenticated = true } }
        return answer
    }

    func transportDidCollect(metrics: TransferMetrics) {
        inner.transportDidCollect(metrics: metrics)
    }

    var transportWantsPause: Bool { inner.transportWantsPause }
    func transportAwaitsConnection() { inner.transportAwaitsConnection() }
    func transportDidLeaveConnectionQueue() { inner.transportDidLeaveConnectionQueue() }

    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        let (notModified, buffer, head) = state.withLock { ($0.notModified, $0.buffer, $0.response) }
        switch mode {
        case .invalidate:
            if error == nil, let response { cache.invalidate(after: response, to: request) }
            if error == nil, let buffer, let head,
                let entry = cache.entry(for: HTTPCache.getRequest(for: request), response: head, body: buffer, requestDate: requestDate)
            {
                if let kept = options.responseHandler.map({ $0(entry) }) ?? entry { cache.store(kept) }
            }
        case .load(_, let whenDisconnected, _, _):
            if let notModified {
                if !notModified.data.isEmpty { inner.transportDidReceive(data: notModified.data) }
                release.complete(inner, response: notModified.httpResponse(), error: error)
                return
            }
            // The connection failed before any response byte: the one rule decided what answers.
            if let error, head == nil, response == nil, let failure = ConveyorError.connectivityFailure(of: error) {
                switch whenDisconnected {
                case .stored(let entry):
                    guard let stored = entry.httpResponse() else { break }
                    options.reportSource(.staleOnError)
                    inner.transportDidReceive(response: stored)
                    if !entry.data.isEmpty { inner.transportDidReceive(data: entry.data) }
                    release.complete(inner, response: stored, error: nil)
                    return
                case .gatewayTimeout:
                    guard let url = request.url else { break }
                    let reason = Data(
                        "504 Gateway Timeout: \(failure), and the stored response may not be served stale (must-revalidate or no-cache)\n"
                            .utf8)
                    let gateway = HTTPResponseHead(
                        url: url, statusCode: 504,
                        headers: ["Content-Type": "text/plain; charset=utf-8", "Content-Length": String(reason.count)])
                    inner.transportDidReceive(response: gateway)
                    inner.transportDidReceive(data: reason)
                    release.complete(inner, response: gateway, error: nil)
                    return
                case .transportError: break
                }
            }
            if error == nil, let buffer, let head,
                let entry = cache.entry(for: request, response: head, body: buffer, requestDate: requestDate)
            {
                if let kept = options.responseHandler.map({ $0(entry) }) ?? entry { cache.storeUnlessPartOfStored(kept, for: request) }
            }
        }
        release.complete(inner, response: response, error: error)
    }
}

/// A task answered from the cache: the stored response's events are delivered
/// asynchronously on the transport's executor, as a network task's would be.
final class CachedTask: TransportTask, Sendable {
    // Sendable, checked by the compiler: the only mutable state, `cancelled`, sits behind one
    // Mutex.
    private let cancelled = Lock(false)

    /// Answers `request` with `504 Gateway Timeout`, as a cache does for `only-if-cached` with
    /// nothing stored that may answer (RFC 9111 §5.2.1.7).
    /// `release` holds what the attempt holds, let go of as it completes.
    static func deliverGatewayTimeout(
        for request: URLRequest, to delegate: any TransportTaskDelegate, release: AttemptRelease,
        on executor: any TransferExecutor
    ) -> CachedTask {
        let task = CachedTask()
        let head = request.url.map { HTTPResponseHead(url: $0, statusCode: 504, headers: ["Content-Length": "0"]) }
        executor.execute(urgent: false) {
            if task.cancelled.withLock({ $0 }) {
                release.complete(delegate, response: nil, error: URLError(.cancelled))
                return
            }
            guard let head else {
                release.complete(delegate, response: nil, error: URLError(.resourceUnavailable))
                return
            }
            delegate.transportDidReceive(response: head)
            release.complete(delegate, response: head, error: nil)
        }
        return task
    }

    /// Delivers `entry`, or fails with `resourceUnavailable` when there is none; `release`
    /// holds what the attempt holds, let go of as it completes.
    static func deliver(
        _ entry: CachedResponse?, to delegate: any TransportTaskDelegate, options: HTTPCacheOptions, release: AttemptRelease,
        on executor: any TransferExecutor
    ) -> CachedTask {
        let task = CachedTask()
        let head = entry?.httpResponse()
        if head != nil { options.reportSource(.cache) }
        executor.execute(urgent: false) {
            if task.cancelled.withLock({ $0 }) {
                release.complete(delegate, response: nil, error: URLError(.cancelled))
                return
            }
            guard let entry, let head else {
                // Only the cache-only policy asks for a missing entry.
                release.complete(delegate, response: nil, error: URLError(.resourceUnavailable))
                return
            }
            delegate.transportDidReceive(response: head)
            if !entry.data.isEmpty { delegate.transportDidReceive(data: entry.data) }
            release.complete(delegate, response: head, error: nil)
        }
        return task
    }

    func cancel() { cancelled.withLock { $0 = true } }
}

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
        for request: URLRequest, bodyFile: URL?, transport: any Transport,
        delegate: any TransportTaskDelegate, options: HTTPCacheOptions
    ) -> any TransportTask {
        let method = (request.httpMethod ?? "GET").uppercased()
        guard method == "GET" || method == "HEAD" else {
            let exchange = HTTPCacheExchange(cache: self, request: request, inner: delegate, options: options, mode: .invalidate)
            return transport.startTask(for: request, bodyFile: bodyFile, delegate: exchange)
        }
        // Decide on the request as sent: the transport would add the stored cookies, which
        // `Vary: Cookie` (and so the choice of a stored response) depends on.
        var request = request
        if let error = transport.cookies.stamp(&request) { return RefusedTransportTask.refusing(error, delegate: delegate) }
        let requestControl = CacheControl(request.value(forHTTPHeaderField: "Cache-Control"))
        let entry = options.policy == .reloadIgnoringCache || requestControl.contains("no-store") ? nil : cachedResponse(for: request)
        let offline = options.policy == .returnCacheDataWhenUnreachable

        // Answered from the cache: always for cache-only (a miss fails), any entry for
        // "else load" and for offline while unreachable, a fresh one otherwise.
        let fromCache =
            switch options.policy {
            case .returnCacheDontLoad: true
            case .returnCacheElseLoad: entry != nil
            case .returnCacheDataWhenUnreachable where entry != nil && options.isUnreachable(): true
            default: entry.map { canAnswer(request, with: $0) } ?? false
            }
        if fromCache { return CachedTask.deliver(entry, to: delegate, options: options) }
        var sent = request
        var revalidating: CachedResponse?
        let callerIsConditional =
            request.value(forHTTPHeaderField: "If-None-Match") != nil
            || request.value(forHTTPHeaderField: "If-Modified-Since") != nil
        if let entry, !callerIsConditional, !entry.conditionalHeaders.isEmpty, entry.statusCode == 200 || method == "HEAD" {
            for (name, value) in entry.conditionalHeaders { sent.setHeader(value, for: name) }
            revalidating = entry
        }
        let exchange = HTTPCacheExchange(
            cache: self, request: sent, inner: delegate, options: options,
            mode: .load(revalidating: revalidating, fallback: offline ? entry : nil))
        return transport.startTask(for: sent, bodyFile: bodyFile, delegate: exchange)
    }
}

/// Sits between a transport and an operation's delegate for one attempt: turns a 304 into
/// the stored response, buffers a storable body and stores it, falls back to a stored entry
/// when the network fails (offline policy), and invalidates after unsafe methods.
final class HTTPCacheExchange: TransportTaskDelegate, @unchecked Sendable {
    // @unchecked Sendable: the mutable state is `state`, behind one Mutex; the rest is immutable.

    enum Mode {
        case invalidate
        case load(revalidating: CachedResponse?, fallback: CachedResponse?)
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
    private let requestDate = Date()
    private let state = Lock(State())

    init(cache: HTTPCache, request: URLRequest, inner: any TransportTaskDelegate, options: HTTPCacheOptions, mode: Mode) {
        self.cache = cache
        self.request = request
        self.inner = inner
        self.options = options
        self.mode = mode
    }

    func transportDidReceive(response: HTTPResponseHead) {
        guard case .load(let revalidating, _) = mode else {
            inner.transportDidReceive(response: response)
            return
        }
        if response.statusCode == 304, let revalidating {
            let refreshed = revalidating.refreshed(with: response, requestDate: requestDate, responseDate: Date())
            if let head = refreshed.httpResponse() {
                // A HEAD revalidated against a stored GET must not replace the GET's body.
                if revalidating.method == (request.httpMethod ?? "GET").uppercased() { cache.store(refreshed) }
                state.withLock { $0.notModified = refreshed }
                options.reportSource(.revalidatedCache)
                inner.transportDidReceive(response: head)
                return
            }
        }
        let authenticated = state.withLock { $0.authenticated }
        let storable =
            cache.canStore(response, for: request, authenticated: authenticated)
            && (response.expectedContentLength < 0 || response.expectedContentLength <= Int64(cache.maximumEntrySize))
        state.withLock {
            $0.buffer = storable ? Data() : nil
            $0.response = response
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

    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        let (notModified, buffer, head) = state.withLock { ($0.notModified, $0.buffer, $0.response) }
        switch mode {
        case .invalidate:
            if error == nil, let response { cache.invalidate(after: response, to: request) }
        case .load(_, let fallback):
            if let notModified {
                if !notModified.data.isEmpty { inner.transportDidReceive(data: notModified.data) }
                inner.transportDidComplete(response: notModified.httpResponse(), error: error)
                return
            }
            if let error, let fallback, Self.isConnectivityFailure(error), head == nil, let stored = fallback.httpResponse() {
                options.reportSource(.cache)
                inner.transportDidReceive(response: stored)
                if !fallback.data.isEmpty { inner.transportDidReceive(data: fallback.data) }
                inner.transportDidComplete(response: stored, error: nil)
                return
            }
            if error == nil, let buffer, let head,
                let entry = cache.entry(for: request, response: head, body: buffer, requestDate: requestDate)
            {
                if let kept = options.responseHandler.map({ $0(entry) }) ?? entry { cache.store(kept) }
            }
        }
        inner.transportDidComplete(response: response, error: error)
    }

    /// Failures that mean "no network", for which the offline policy serves a stored entry.
    static func isConnectivityFailure(_ error: any Error) -> Bool {
        guard let error = error as? URLError else { return false }
        let codes: Set<URLError.Code> = [
            .notConnectedToInternet, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
            .networkConnectionLost, .timedOut, .internationalRoamingOff, .dataNotAllowed,
        ]
        return codes.contains(error.code)
    }
}

/// A task answered from the cache: the stored response's events are delivered
/// asynchronously, as a network task's would be.
final class CachedTask: TransportTask, @unchecked Sendable {
    // @unchecked Sendable: the only mutable state, `cancelled`, sits behind one Mutex.
    private let cancelled = Lock(false)

    /// Delivers `entry`, or fails with `resourceUnavailable` when there is none.
    static func deliver(
        _ entry: CachedResponse?, to delegate: any TransportTaskDelegate, options: HTTPCacheOptions
    ) -> CachedTask {
        let task = CachedTask()
        let head = entry?.httpResponse()
        if head != nil { options.reportSource(.cache) }
        DispatchQueue.global().async {
            if task.cancelled.withLock({ $0 }) {
                delegate.transportDidComplete(response: nil, error: URLError(.cancelled))
                return
            }
            guard let entry, let head else {
                // Only the cache-only policy asks for a missing entry.
                delegate.transportDidComplete(response: nil, error: URLError(.resourceUnavailable))
                return
            }
            delegate.transportDidReceive(response: head)
            if !entry.data.isEmpty { delegate.transportDidReceive(data: entry.data) }
            delegate.transportDidComplete(response: head, error: nil)
        }
        return task
    }

    func cancel() { cancelled.withLock { $0 = true } }
}

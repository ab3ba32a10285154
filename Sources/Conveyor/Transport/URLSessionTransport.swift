import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``Transport`` over one `URLSession` per client, with one session-level delegate that
/// routes callbacks to operations by task identifier.
///
/// One session (rather than one per operation) keeps connection reuse across operations; a
/// session-level delegate (rather than per-task delegates) is required on Linux, where per-task
/// delegates receive only some of the callbacks.
final class URLSessionTransport: Transport {
    /// Used by operations that were not created by a client.
    static let shared = URLSessionTransport(configuration: .default)

    let session: URLSession
    private let router: URLSessionDelegateRouter
    let cookies: TransportCookies
    /// The session's serial delegate queue, as the transfers' executor.
    let executor: any TransferExecutor
    /// Where tasks are created and resumed, off the executor: corelibs makes `dataTask(with:)`
    /// and `resume()` wait (`sync`) for its session's work queue, and with starts on the
    /// delegate queues of many sessions at once (the test suite's 60) those waits stalled every
    /// session's callbacks for up to 3.9 s (seen with gdb: delegate-queue threads in
    /// `dataTask`, `resume` and `cancel`, no thread in corelibs). One serial queue per session
    /// keeps the executor free and the starts in order.
    private let starter = DispatchQueue(label: "org.conveyor.urlsession-start")
    /// Why HTTPS requests cannot be sent as configured: on Linux, corelibs URLSession cannot
    /// honour custom authorities or pins, and silently not checking them would be worse than
    /// failing; on Apple platforms, a pin or authority file that cannot be used.
    private let trustError: String?
    /// The session's `httpAdditionalHeaders`, added to each request that does not set its own.
    private let additionalHeaders: [(String, String)]
    /// The first of them that fails the header check: every request is refused with it.
    private let invalidAdditionalHeader: String?
    /// The credential values among them, masked (``SentSecrets``) while the transport lives.
    private let configuredSecrets: [String]
    /// On Linux, requests beyond the connections per host wait here rather than inside corelibs,
    /// where their idle timer would run (see ``ConnectionAdmission``). Apple's URLSession
    /// multiplexes HTTP/2 far beyond that limit, so there requests go straight in.
    private let admission: ConnectionAdmission?
    /// Why no request can be sent as configured: a malformed route, or one URLSession cannot
    /// take (a Unix socket, address overrides). Refused rather than sent over TCP as if the
    /// setting were not there.
    private let routeError: ConveyorError?
    /// Whether stream bodies go to URLSession through a ``BodyStreamPump`` (a stream of its own
    /// kind, fed from a thread of the pump's) instead of as they are. Always on Apple platforms,
    /// where CFNetwork cannot read Swift `InputStream` subclasses; off on Linux, where corelibs
    /// reads them directly (and faster), unless a test turns it on to run the pump there.
    let pumpsBodyStreams: Bool

    /// - Parameters:
    ///   - configuration: Copied; its `urlCache` is turned off because URLSession on Linux
    ///     never writes to it and ignores the query when reading it, and its
    ///     `urlCredentialStorage` because credentials come from the operation.
    ///   - tls: Honoured whole on Apple platforms, where URLSession asks a server-trust
    ///     question per connection (``ServerTrustPolicy``). corelibs URLSession on Linux asks
    ///     none: custom authorities and pins make every HTTPS request fail there with
    ///     ``ConveyorError/serverTrustFailed(host:reason:)``, and `allowsInvalidCertificates`
    ///     cannot turn validation off.
    ///   - route: The client's Unix socket and address overrides: URLSession can take neither,
    ///     so either fails every request with ``ConveyorError/routeFailed(reason:)``.
    ///   - pumpsBodyStreams: Linux only (see ``pumpsBodyStreams``); default off.
    init(
        configuration: URLSessionConfiguration, tls: TLSConfiguration = .default, route: RouteSettings = .direct,
        pumpsBodyStreams: Bool = false
    ) {
        #if canImport(FoundationNetworking)
            self.pumpsBodyStreams = pumpsBodyStreams
        #else
            self.pumpsBodyStreams = true
        #endif
        routeError = route.configurationError(for: .urlSession)
        let configuration = configuration.copy() as! URLSessionConfiguration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // Credentials come from the operation (its credential, challenge handler, authenticator),
        // for its client's origins only: a credential stored for the whole process must not
        // answer a challenge the operation declined (Apple's default handling would use it).
        configuration.urlCredentialStorage = nil
        // Conveyor sends and stores cookies itself (TransportCookies), as the curl transport does.
        cookies = TransportCookies(configuration)
        configuration.httpShouldSetCookies = false
        // Nor does URLSession store them: corelibs looked at every response header line for
        // cookies (splitting and trimming each), 7 % of the client's CPU at 16 in flight in
        // `conveyor-bench`, only to store what TransportCookies stores anyway. It skips that when
        // the policy is `.never`; the caller's policy is TransportCookies' (read above).
        configuration.httpCookieAcceptPolicy = .never
        // …and adds the session's additional headers itself, so they pass the same header check
        // as the request's own (URLSession would put them on the wire unchecked).
        additionalHeaders = (configuration.httpAdditionalHeaders ?? [:]).compactMap { name, value in
            (name as? String).map { ($0, "\(value)") }
        }
        invalidAdditionalHeader = HTTPGrammar.firstInvalidFieldName(in: additionalHeaders)
        configuredSecrets = SentSecrets.values(ofHeaders: additionalHeaders.map { (key: $0.0, value: $0.1) })
        SentSecrets.shared.pin(configuredSecrets)
        configuration.httpAdditionalHeaders = nil
        let trustPolicy = ServerTrustPolicy(tls)
        router = URLSessionDelegateRouter(trustPolicy: trustPolicy, cookies: cookies)
        #if canImport(FoundationNetworking)
            admission = ConnectionAdmission(limit: configuration.httpMaximumConnectionsPerHost)
        #else
            admission = nil
        #endif
        #if canImport(Security)
            // The router's trust policy checks every connection; a configuration it cannot use
            // fails each HTTPS request at once, before a connection is made.
            trustError = trustPolicy.configurationError
        #else
            trustError =
                tls.customizesTrust
                ? "custom certificate authorities and public-key pins need the curl transport (HTTPClient.Configuration.transport = .curl, Linux)"
                : nil
        #endif
        // Serial, so the events of one task arrive in order.
        #if canImport(FoundationNetworking)
            let delegateQueue = SerialDelegateQueue(label: "org.conveyor.urlsession-delegate")
            executor = delegateQueue
        #else
            let delegateQueue = OperationQueue()
            delegateQueue.name = "org.conveyor.urlsession-delegate"
            delegateQueue.maxConcurrentOperationCount = 1
            executor = OperationQueueExecutor(delegateQueue)
        #endif
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: delegateQueue)
    }

    func refusal(for request: URLRequest) -> ConveyorError? {
        if let routeError { return routeError }
        if UnixSocketURL.isUnixSocket(request.url) {
            return .routeFailed(reason: .unsupportedByTransport(feature: "a Unix domain socket", transport: .urlSession))
        }
        if let trustError, request.url?.scheme?.lowercased() == "https" {
            return .serverTrustFailed(host: request.url?.host ?? "the server", reason: trustError)
        }
        return nil
    }

    func startTask(
        for request: URLRequest, bodyFile: BodyFile.Snapshot?, plan: AttemptPlan, delegate: any TransportTaskDelegate
    ) -> any TransportTask {
        if let error = refusal(for: request) {
            return RefusedTransportTask.refusing(error, delegate: delegate, on: executor)
        }
        if let invalidAdditionalHeader {
            return RefusedTransportTask.refusing(
                .invalidHeader(name: invalidAdditionalHeader), delegate: delegate, on: executor)
        }
        var request = request
        let own = request.allHTTPHeaderFields ?? [:]
        for (name, value) in additionalHeaders where !own.keys.contains(where: { $0.equalsIgnoringASCIICase(name) }) {
            request.setHeader(value, for: name)
        }
        // Operations run their own idle timer, which honours fractional seconds (URLSession on
        // Linux truncates them: 0.5 s fires at once). Keep URLSession's timer behind ours.
        // Clamped first: corelibs turns it into whole milliseconds with `Int(…)`, which traps
        // on `.infinity`. No idle timeout (0, negative, NaN, infinite: the operation arms no
        // timer) is the longest one here. The operation's idle timeout, not the request's
        // `timeoutInterval`: that is only where the operation's default came from.
        let idle = plan.idleTimeout
        request.timeoutInterval = idle > 0 ? Seconds.clamped(idle).rounded(.up) + 1 : Seconds.maximum
        let stampedSecrets: [String]
        do {
            stampedSecrets = try cookies.stamp(&request)
        } catch {
            return RefusedTransportTask.refusing(error, delegate: delegate, on: executor)
        }
        // What the task holds, let go of when it completes (it completes through the router).
        let release = AttemptRelease()
        var openFile: OpenBodyFile?
        if let bodyFile {
            // Checked and opened here (O_NONBLOCK: a FIFO cannot block this thread), not left to
            // corelibs' `uploadTask(fromFile:)`: that reads the file to its end, whatever the
            // Content-Length said (a grown file's extra bytes became the next request on the
            // connection), and sent a FIFO or /dev/zero as an empty body.
            do {
                let file = try OpenBodyFile(bodyFile)
                openFile = file
                release.hold(uploadFile: file)
            } catch {
                return RefusedTransportTask.refusing(error, delegate: delegate, on: executor)
            }
            request.setHeader(String(bodyFile.length), for: "Content-Length")
            #if canImport(FoundationNetworking)
                // corelibs sends a stream body with libcurl's chunked coding unless the request
                // names a Transfer-Encoding; a blank one is that name, yet libcurl never sends a
                // field without a value. So the body goes out unchunked under its exact
                // Content-Length, and the stream ends after that many bytes. Linux only:
                // CFNetwork sends a stream body under the Content-Length a request sets, and
                // could put the blank field on the wire, which servers refuse.
                request.setHeader(" ", for: "Transfer-Encoding")
            #endif
        } else if request.httpBodyStream != nil {
            #if canImport(FoundationNetworking)
                // A stream of the caller's: corelibs sends it chunked whatever the request says,
                // and kept a Content-Length the caller set beside the chunked coding — two
                // framings in one message (RFC 9112 §6.1); a server that went by the length read
                // the chunk lines as body and the rest as the next request on the connection
                // (attack finding). Its length is the stream's own, so the field goes.
                request.setHeader(nil, for: "Content-Length")
            #endif
        }
        // Pinned once the request is sure to be sent (nothing above refuses it any more).
        release.pin(stampedSecrets)
        let prepared = request
        let session = session
        let router = router
        let bodyFileToSend = openFile
        let pumps = pumpsBodyStreams
        @Sendable func makeTask() -> (URLSessionTask, PumpedRequestBody?) {
            var request = prepared
            // A new stream per task, reading the file opened above from its first byte.
            if let bodyFileToSend { request.httpBodyStream = BodyFileStream(opened: bodyFileToSend) }
            // A file body goes through the pump too, rather than `uploadTask(with:fromFile:)`:
            // the stream keeps the exact length and the changed-file checks (above), which
            // URLSession's own file reading does not make.
            guard pumps, let source = request.httpBodyStream else {
                let task = session.dataTask(with: request)
                router.register(delegate, for: task, release: release)
                task.resume()
                return (task, nil)
            }
            let body = PumpedRequestBody(source: source)
            release.hold(pump: body)
            let stream = body.makeStream()
            // Without a stream (no pipe: out of descriptors) the task is cancelled at once and
            // reports the body's failure; the empty stream is never read.
            request.httpBodyStream = stream ?? InputStream(data: Data())
            let task = session.dataTask(with: request)
            // A failed source cancels the task, reported as the source's failure.
            let delegateQueue = session.delegateQueue
            body.attach { [weak task] in task?.cancelInDelegateOrder(on: delegateQueue) }
            router.register(delegate, for: task, release: release)
            task.resume()
            if stream == nil { task.cancelInDelegateOrder(on: delegateQueue) }
            return (task, body)
        }
        // Requests share a limit under their ``Origin``, as connections are pooled; a URL without
        // one (no host) fails in URLSession at once and needs no place.
        guard let admission, let origin = Origin(prepared.url) else {
            let (task, body) = makeTask()
            return URLSessionTransportTask(task: task, delegateQueue: session.delegateQueue, body: body)
        }
        let task = AdmittedTransportTask(
            admission: admission, origin: origin, delegate: delegate, release: release, delegateQueue: session.delegateQueue,
            starter: starter)
        // An admitted task's pump stops when the task completes (its cancel completes it).
        task.enqueue { makeTask().0 }
        return task
    }

    func invalidate() {
        session.finishTasksAndInvalidate()
    }

    /// The client and every operation that used this transport are gone.
    deinit {
        invalidate()
        SentSecrets.shared.unpin(configuredSecrets)
    }
}

/// A `URLSessionTask` seen through the ``TransportTask`` protocol.
struct URLSessionTransportTask: TransportTask, Sendable {
    // Sendable, checked by the compiler: URLSessionTask is Sendable (thread-safe for cancel(),
    // suspend() and resume()) in Foundation on every platform.
    let task: URLSessionTask
    /// The session's serial delegate queue, which cancels go through (see ``URLSessionTask/cancelInDelegateOrder(on:)``).
    let delegateQueue: OperationQueue
    /// The task's pumped body, stopped at once by a cancel (its thread would otherwise go on
    /// until the task's completion reaches the delegate); nil when the body is not pumped.
    var body: PumpedRequestBody? = nil

    #if canImport(FoundationNetworking)
        // corelibs (Linux) restarts a running data task from the beginning when it is resumed
        // after a suspend (measured: a second response head), and it reads ahead into its
        // delegate queue anyway: no backpressure is possible there. Use the curl transport.
        func pauseReceiving() {}
        func resumeReceiving() {}
    #else
        /// URLSession stops reading while a running task is suspended.
        func pauseReceiving() { task.suspend() }
        func resumeReceiving() { task.resume() }
    #endif

    func cancel() {
        task.cancelInDelegateOrder(on: delegateQueue)
        body?.cancel()
    }
}

extension URLSessionTask {
    /// Cancels the task from the session's serial delegate queue on Linux (at once elsewhere).
    ///
    /// corelibs traps when a redirect callback is answered after the task was cancelled
    /// (measured: a pause or cancel during a redirect killed the process in 2 of 2 runs of 200).
    /// Cancelling from the delegate queue orders the cancel with that callback: either the
    /// callback has answered first, or it sees the task cancelled and does not answer (see
    /// `URLSessionDelegateRouter`). The cancel jumps ahead of queued body chunks, which the
    /// operation drops anyway once it stopped listening to the task.
    func cancelInDelegateOrder(on delegateQueue: OperationQueue) {
        #if canImport(FoundationNetworking)
            let cancel = BlockOperation { [self] in self.cancel() }
            cancel.queuePriority = .veryHigh
            delegateQueue.addOperation(cancel)
        #else
            cancel()
        #endif
    }
}

/// The task of a request the transport refused before sending; there is nothing to cancel.

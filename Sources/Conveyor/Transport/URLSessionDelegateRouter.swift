import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Security)
    import Security
#endif

/// The one delegate of a ``URLSessionTransport``'s session. It looks up the
/// ``TransportTaskDelegate`` of each task by identifier and forwards the event.
///
/// Every delegate method is implemented in this class, the one that declares the conformance:
/// corelibs Foundation does not find methods that live in extensions or superclasses.
final class URLSessionDelegateRouter: NSObject, URLSessionDataDelegate, Sendable {
    private struct State {
        var delegates: [Int: any TransportTaskDelegate] = [:]
        /// What each task holds (its pumped body, body file, connection place, pinned values),
        /// let go of as it completes; its pumped body answers URLSession's requests to send the
        /// body again.
        var releases: [Int: AttemptRelease] = [:]
        /// Why a task's server was not trusted (Apple platforms), reported when it completes.
        var trustFailures: [Int: String] = [:]
        /// Tasks whose challenge was refused because their body stream cannot be sent again
        /// (Linux), reported as `requestBodyStreamExhausted` when they complete.
        var exhaustedBodies: Set<Int> = []
        /// Tasks whose 3xx head reached their delegate. corelibs withholds the head (and body)
        /// of a 301-303 or 305-308 that has no usable `Location`: it completes the task without
        /// a word, and the head is delivered from `task.response` then.
        var redirectHeadsDelivered: Set<Int> = []
    }
    // Sendable, checked by the compiler: the only mutable state is `state`, behind one Mutex.
    private let state = Lock(State())
    /// How server-trust challenges are answered (Apple platforms; corelibs never asks).
    let trustPolicy: ServerTrustPolicy
    /// Where the cookies of each response head go.
    let cookies: TransportCookies

    init(trustPolicy: ServerTrustPolicy, cookies: TransportCookies) {
        self.trustPolicy = trustPolicy
        self.cookies = cookies
        super.init()
    }

    private func storeCookies(of response: HTTPURLResponse, for task: URLSessionTask) {
        if let request = task.currentRequest ?? task.originalRequest { cookies.store(from: response, for: request) }
    }

    /// Routes the events of `task` to `delegate`, and ends it through `release`.
    func register(_ delegate: any TransportTaskDelegate, for task: URLSessionTask, release: AttemptRelease) {
        state.withLock { state in
            state.delegates[task.taskIdentifier] = delegate
            state.releases[task.taskIdentifier] = release
        }
    }

    private func delegate(for task: URLSessionTask) -> (any TransportTaskDelegate)? {
        state.withLock { $0.delegates[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        // corelibs hands over every interim head (`100 Continue`, `103 Early Hints`) as if it
        // were the response: one every 10 ms kept an operation "active" forever. Only a final
        // head counts, as on the curl transport.
        if let http = response as? HTTPURLResponse, (100..<200).contains(http.statusCode) {
            completionHandler(.allow)
            return
        }
        if let http = response as? HTTPURLResponse {
            storeCookies(of: http, for: dataTask)
            let isRedirect = (300..<400).contains(http.statusCode)
            let delegate = state.withLock { state in
                if isRedirect { state.redirectHeadsDelivered.insert(dataTask.taskIdentifier) }
                return state.delegates[dataTask.taskIdentifier]
            }
            delegate?.transportDidReceive(response: HTTPResponseHead(http))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        delegate(for: dataTask)?.transportDidReceive(data: data)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64, totalBytesExpectedToSend: Int64
    ) {
        let (delegate, release) = state.withLock { ($0.delegates[task.taskIdentifier], $0.releases[task.taskIdentifier]) }
        // A body file's length is the total: corelibs sees a stream, of unknown length to it.
        delegate?.transportDidSend(
            bytes: bytesSent, totalBytesSent: totalBytesSent,
            totalBytesExpectedToSend: release?.uploadLength ?? totalBytesExpectedToSend
        )
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // Never let URLSession follow: on Linux it drops the body of every redirected request
        // and forwards Authorization to other hosts. The 3xx is delivered as the response and
        // the operation decides.
        //
        // A task cancelled while this callback waited in the delegate queue must not be answered:
        // corelibs stops waiting for the answer when the task is cancelled, and an answer after
        // that traps the process ("Received callback for HTTP redirection, but we're not waiting
        // for it"). Cancels go through this same serial queue (`cancelInDelegateOrder`), so the
        // state read here cannot change before the answer is taken.
        #if canImport(FoundationNetworking)
            guard task.state == .running || task.state == .suspended else { return }
        #endif
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        #if canImport(Security)
            // Only Apple platforms ask this; the policy decides (ServerTrustPolicy), the Security
            // framework evaluates (ServerTrustPolicy+Apple).
            if challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
                let trust = challenge.protectionSpace.serverTrust
            {
                switch trustPolicy.answer(for: trust) {
                case .performDefaultHandling:
                    completionHandler(.performDefaultHandling, nil)
                case .useCredential:
                    completionHandler(.useCredential, URLCredential(trust: trust))
                case .reject(let reason):
                    recordTrustFailure(reason, for: task)
                    completionHandler(.cancelAuthenticationChallenge, nil)
                }
                return
            }
        #endif
        let (disposition, credential) = delegate(for: task)?.transportDisposition(for: challenge) ?? (.cancelAuthenticationChallenge, nil)
        #if canImport(FoundationNetworking)
            // corelibs answers a challenge by sending the request again itself, reading the body
            // from the same stream, and never asks for a new one (`needNewBodyStream`): a caller's
            // stream (or a pumped one) is spent, and the server got an empty or cut body that
            // succeeded (found by the independent attack). Conveyor's own streams start over
            // when opened again; any other stream fails the request, as on Apple platforms.
            if disposition == .useCredential, let stream = (task.originalRequest ?? task.currentRequest)?.httpBodyStream, !stream.startsOver
            {
                _ = state.withLock { $0.exhaustedBodies.insert(task.taskIdentifier) }
                completionHandler(.cancelAuthenticationChallenge, nil)
                return
            }
        #endif
        if disposition == .useCredential, let credential {
            completionHandler(.useCredential, credential)
        } else {
            #if canImport(Darwin)
                // Apple: go on without a credential, so a 401 (or a server's optional request for
                // a client certificate) reaches the operation as on Linux instead of becoming a
                // cancelled request. The session keeps no credential storage (see
                // `URLSessionTransport`), so nothing answers in Conveyor's place.
                completionHandler(.performDefaultHandling, nil)
            #else
                // Linux: answer definitively; `.performDefaultHandling` leaves a 401 hanging
                // forever, with no timeout.
                completionHandler(.cancelAuthenticationChallenge, nil)
            #endif
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        // URLSession sends the body again (an authentication challenge, a reused connection that
        // closed): a new pump reads it from the start. A caller's stream, which cannot be read
        // twice, gets nil, and URLSession fails the task (`requestBodyStreamExhausted`).
        if let body = state.withLock({ $0.releases[task.taskIdentifier] })?.pump {
            completionHandler(body.makeStream())
            return
        }
        #if canImport(FoundationNetworking)
            // Not pumped (Linux: corelibs reads the request's own stream). corelibs asks here when
            // libcurl sends the request again on a fresh connection because the reused one died
            // before an answer; given no stream it reports the rewind as done, and the headers
            // went out with no body, the attempt waiting for the idle timeout (issue #58 item 12).
            // Conveyor's own streams (a body file's) start over; a caller's still gets nil. So
            // does a `Data` body: corelibs traps on a stream for one, and cannot rewind it
            // itself (its body stays unsent; TransportsAndTLS documents it).
            let request = task.originalRequest ?? task.currentRequest
            completionHandler((request?.httpBodyStream as? any RestartableBodyStream)?.restartedBodyStream())
        #else
            completionHandler(nil)
        #endif
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        // Apple platforms deliver these before the task completes; corelibs never does.
        if let transfer = URLSessionTransactionTimeline(metrics)?.transferMetrics {
            delegate(for: task)?.transportDidCollect(metrics: transfer)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        // A refused redirect's 3xx reaches only this callback, and may set cookies too.
        if let http = task.response as? HTTPURLResponse { storeCookies(of: http, for: task) }
        let (delegate, release, trustFailure, exhaustedBody, redirectHeadDelivered) = state.withLock {
            (
                $0.delegates.removeValue(forKey: task.taskIdentifier), $0.releases.removeValue(forKey: task.taskIdentifier),
                $0.trustFailures.removeValue(forKey: task.taskIdentifier), $0.exhaustedBodies.remove(task.taskIdentifier) != nil,
                $0.redirectHeadsDelivered.remove(task.taskIdentifier) != nil
            )
        }
        #if canImport(FoundationNetworking)
            // corelibs ends a task whose body stream failed a read with "aborted by callback"
            // (-1, unknown), which says nothing of the body; it is the stream's failure, named as
            // Apple's URLSession and the curl transport name it (found by the independent attack).
            let streamFailed =
                (error as? URLError)?.code == .unknown && (task.originalRequest ?? task.currentRequest)?.httpBodyStream != nil
        #else
            let streamFailed = false
        #endif
        let url = task.currentRequest?.url ?? task.originalRequest?.url
        if exhaustedBody || streamFailed {
            let text =
                exhaustedBody
                ? "the request body stream cannot be sent again to answer the server's challenge"
                : "the request body stream failed"
            if let delegate, let release { release.complete(delegate, response: nil, error: URLError.bodyStreamExhausted(text, url: url)) }
            return
        }
        // A 3xx without a usable Location (see `redirectHeadsDelivered`): corelibs finished it
        // without handing over its head, so the operation would see no response at all. Its
        // body stays inside corelibs and is lost; the curl transport delivers it.
        if error == nil, !redirectHeadDelivered, let http = task.response as? HTTPURLResponse, (300..<400).contains(http.statusCode) {
            delegate?.transportDidReceive(response: HTTPResponseHead(http))
        }
        // corelibs' codes and texts are decided here, before any delegate (the cache's included)
        // sees them; the task's release stops its pump, gives its place back and may name the
        // body's failure instead.
        guard let delegate, let release else { return }
        release.complete(
            delegate, response: (task.response as? HTTPURLResponse).map(HTTPResponseHead.init),
            error: error.map { Self.completionError($0, url: url, trustFailure: trustFailure) })
    }

    /// Remembers why the server of `task` was refused: URLSession reports the refusal as a
    /// cancelled request, and the operation should learn the reason instead.
    func recordTrustFailure(_ reason: String, for task: URLSessionTask) {
        state.withLock { $0.trustFailures[task.taskIdentifier] = reason }
    }

    /// The error a task completed with, as operations see it: a refused server's reason when the
    /// trust policy refused it, else URLSession's error with corelibs' codes and texts decided.
    static func completionError(_ error: any Error, url: URL?, trustFailure: String?) -> any Error {
        if let trustFailure { return ConveyorError.serverTrustFailed(host: url?.host ?? "the server", reason: trustFailure) }
        return URLSessionErrors.decided(error, url: url)
    }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one delegate of a ``URLSessionTransport``'s session. It looks up the
/// ``TransportTaskDelegate`` of each task by identifier and forwards the event.
///
/// Every delegate method is implemented in this class, the one that declares the conformance:
/// corelibs Foundation does not find methods that live in extensions or superclasses.
final class URLSessionDelegateRouter: NSObject, URLSessionDataDelegate, Sendable {
    // Sendable, checked by the compiler: the only mutable state is `delegates`, behind one Mutex.
    private let delegates = Lock<[Int: any TransportTaskDelegate]>([:])
    /// Whether server trust challenges are accepted whatever the certificate (Apple platforms).
    let allowsInvalidCertificates: Bool
    /// Where the cookies of each response head go.
    let cookies: TransportCookies

    init(allowsInvalidCertificates: Bool, cookies: TransportCookies) {
        self.allowsInvalidCertificates = allowsInvalidCertificates
        self.cookies = cookies
        super.init()
    }

    private func storeCookies(of response: HTTPURLResponse, for task: URLSessionTask) {
        if let request = task.currentRequest ?? task.originalRequest { cookies.store(from: response, for: request) }
    }

    func register(_ delegate: any TransportTaskDelegate, for task: URLSessionTask) {
        delegates.withLock { $0[task.taskIdentifier] = delegate }
    }

    private func delegate(for task: URLSessionTask) -> (any TransportTaskDelegate)? {
        delegates.withLock { $0[task.taskIdentifier] }
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
            delegate(for: dataTask)?.transportDidReceive(response: HTTPResponseHead(http))
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
        delegate(for: task)?.transportDidSend(
            bytes: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend
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
        #if canImport(Darwin)
            if challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust {
                // Certificate validation stays the system's (only Apple platforms ask this), unless
                // the client explicitly opted out for development.
                if allowsInvalidCertificates, let trust = challenge.protectionSpace.serverTrust {
                    completionHandler(.useCredential, URLCredential(trust: trust))
                } else {
                    completionHandler(.performDefaultHandling, nil)
                }
                return
            }
        #endif
        let (disposition, credential) = delegate(for: task)?.transportDisposition(for: challenge) ?? (.cancelAuthenticationChallenge, nil)
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

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        // A refused redirect's 3xx reaches only this callback, and may set cookies too.
        if let http = task.response as? HTTPURLResponse { storeCookies(of: http, for: task) }
        let delegate = delegates.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        // corelibs' codes and texts are decided here, before any delegate (the cache's included) sees them.
        let url = task.currentRequest?.url ?? task.originalRequest?.url
        delegate?.transportDidComplete(
            response: (task.response as? HTTPURLResponse).map(HTTPResponseHead.init),
            error: error.map { URLSessionErrors.decided($0, url: url) })
    }
}

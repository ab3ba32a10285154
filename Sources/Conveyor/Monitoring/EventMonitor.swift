import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Observes each step of the requests a client sends: for metrics, tracing, auditing — what
/// Alamofire users write an `EventMonitor` for. ``NetworkLogger`` is one.
///
/// Install monitors on a client (``HTTPClient/Configuration/eventMonitors``); every operation the
/// client builds or enqueues reports to them. Every method has a default that does nothing, so
/// a monitor implements only what it needs.
///
/// **Where the methods run.** On one serial queue per client, in the order the events happened,
/// for all its monitors in the order they are listed — never on the transfer's thread: a
/// monitor cannot stall a transfer, and the transfer never waits for a monitor. Events gather
/// for about a millisecond before the queue wakes, so a monitor hears of one that much later. Each event
/// carries the values of its moment (the request as sent, the response head, the error, the
/// metrics), so reading the operation is never needed and may show a later state. A monitor
/// that is slower than the events arrive delays the client's other monitors, and its events
/// wait in memory in order — none is dropped, and each keeps its operation alive, with the
/// operation's response body if it kept one in memory (measured: a monitor blocked under 300
/// downloads of 1 MB held 312 MB); do heavy work elsewhere (hand it to a queue of your own, or
/// sample). A monitor that holds its client strongly keeps it alive. Once an operation's
/// ``requestDidFinish(_:request:response:error:metrics:)`` was delivered, no later event of it is.
public protocol EventMonitor: Sendable {
    /// A client took `operation` (built it, or enqueued one built elsewhere).
    func requestWasCreated(_ operation: HTTPRequestOperation)
    /// The operation started: `request` is its request as built.
    func requestDidStart(_ operation: HTTPRequestOperation, request: URLRequest)
    /// An attempt is about to go out: `request` is exactly what is sent — after the
    /// authenticator and the request adapters, with `Range` for a continuation — unless the
    /// client's cache answers it (then ``request(_:wasAnsweredBy:)`` follows, and nothing was
    /// sent). Not reported for a request the transport refuses before sending anything (a
    /// malformed proxy, a route the transport cannot take): the operation fails with nothing
    /// sent. `attempt` counts from 1, each redirect, retry, resume and replay one more
    /// (``OperationMetrics/attemptCount`` counts the retries only).
    func request(_ operation: HTTPRequestOperation, willSend request: URLRequest, attempt: Int)
    /// The attempt waits for the transport to give it a connection — reported for every attempt
    /// sent to the network, however short the wait (the time to the next event is the wait for
    /// a free, reused or new connection, longest when the client's connections to the origin
    /// are all busy).
    func requestIsWaitingForConnection(_ operation: HTTPRequestOperation)
    /// The attempt has its connection; the request goes out on it.
    func requestGotConnection(_ operation: HTTPRequestOperation)
    /// A response head arrived (a redirect's too).
    func request(_ operation: HTTPRequestOperation, didReceive response: HTTPResponseHead)
    /// A redirect is followed: `request` goes out next (as the redirect policy made it).
    func request(_ operation: HTTPRequestOperation, willRedirectTo request: URLRequest, after response: HTTPResponseHead)
    /// The retry policy sends the request again: attempt `attempt` (the retry's, from 2) after
    /// `delay` seconds, because of `error`.
    func request(_ operation: HTTPRequestOperation, willRetry attempt: Int, after delay: TimeInterval, because error: ConveyorError)
    /// The client's cache answered (``HTTPCache/ResponseSource/cache``, a revalidated
    /// ``HTTPCache/ResponseSource/revalidatedCache``, or ``HTTPCache/ResponseSource/staleOnError``).
    func request(_ operation: HTTPRequestOperation, wasAnsweredBy source: HTTPCache.ResponseSource)
    /// The operation finished, once, however it ended: `request` is the request sent last (before
    /// adapters), `response` the last response head, `error` nil on success, `metrics` its
    /// timings and counts (TLS and connection times are in ``OperationMetrics/transfer``).
    func requestDidFinish(
        _ operation: HTTPRequestOperation, request: URLRequest, response: HTTPResponseHead?, error: ConveyorError?,
        metrics: OperationMetrics?)
}

extension EventMonitor {
    /// Does nothing.
    public func requestWasCreated(_ operation: HTTPRequestOperation) {}
    /// Does nothing.
    public func requestDidStart(_ operation: HTTPRequestOperation, request: URLRequest) {}
    /// Does nothing.
    public func request(_ operation: HTTPRequestOperation, willSend request: URLRequest, attempt: Int) {}
    /// Does nothing.
    public func requestIsWaitingForConnection(_ operation: HTTPRequestOperation) {}
    /// Does nothing.
    public func requestGotConnection(_ operation: HTTPRequestOperation) {}
    /// Does nothing.
    public func request(_ operation: HTTPRequestOperation, didReceive response: HTTPResponseHead) {}
    /// Does nothing.
    public func request(_ operation: HTTPRequestOperation, willRedirectTo request: URLRequest, after response: HTTPResponseHead) {}
    /// Does nothing.
    public func request(_ operation: HTTPRequestOperation, willRetry attempt: Int, after delay: TimeInterval, because error: ConveyorError)
    {}
    /// Does nothing.
    public func request(_ operation: HTTPRequestOperation, wasAnsweredBy source: HTTPCache.ResponseSource) {}
    /// Does nothing.
    public func requestDidFinish(
        _ operation: HTTPRequestOperation, request: URLRequest, response: HTTPResponseHead?, error: ConveyorError?,
        metrics: OperationMetrics?
    ) {}
}

extension HTTPClient {
    /// Waits until every event the client's operations reported so far has been handed to its
    /// ``Configuration/eventMonitors`` (they run on a queue of their own): before reading what a
    /// monitor collected, or before exiting. Returns at once without monitors, and when called
    /// from a monitor (the monitors' queue is busy running it: waiting would wait for itself).
    public func flushEventMonitors() {
        hooks?.monitors?.flush()
    }
}

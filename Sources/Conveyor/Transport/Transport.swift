import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The seam between operations and the network.
///
/// A transport starts one HTTP exchange per call and reports it back through a
/// ``TransportTaskDelegate``: the response head, the body in chunks as they arrive, upload
/// progress, then exactly one completion. It never follows redirects (operations do, so that
/// 307/308 keep their body on every platform) and never caches (Conveyor's own cache does).
/// `URLSessionTransport` and (on Linux) `CurlTransport` implement it; ``TransportFactory``
/// picks one per client from ``HTTPClient/Configuration/transport``.
protocol Transport: AnyObject, Sendable {
    /// Starts sending `request`. Events for the task go to `delegate`, serially.
    /// - Parameters:
    ///   - request: The request; its `httpBody` (or body stream) is the body unless `bodyFile` is set.
    ///   - bodyFile: A file to send as the body: exactly its snapshot's length, with that
    ///     `Content-Length`, failing with ``ConveyorError/bodyFileFailed(reason:)`` when the file
    ///     is not the snapshot's (checked when it is opened, and again before its last byte).
    ///   - plan: What the operation decided for the attempt (its idle timeout); the request's
    ///     `timeoutInterval` is not read.
    ///   - delegate: Receives the task's events.
    func startTask(
        for request: URLRequest, bodyFile: BodyFile.Snapshot?, plan: AttemptPlan, delegate: any TransportTaskDelegate
    ) -> any TransportTask

    /// Why the transport would refuse `request` before sending anything (its route is malformed
    /// or one it cannot take, a setting it cannot apply), or nil. ``startTask(for:bodyFile:plan:delegate:)``
    /// fails such a request with this error; the operation asks first, so that monitors are told
    /// of a send only when one happens.
    func refusal(for request: URLRequest) -> ConveyorError?

    /// The serial context its tasks' events run on, and so the executor of every transfer that
    /// goes through it (see ``TransferExecutor``): delegates are called there, and operations
    /// hop their other events onto it.
    var executor: any TransferExecutor { get }

    /// The cookie storage the transport sends from; the cache stamps a request with it first,
    /// to decide on the request as it will be sent.
    var cookies: TransportCookies { get }

    /// Lets running tasks finish, then releases the transport's resources. Transports call it
    /// from their own `deinit`: a client's operations hold its transport, so it outlives the
    /// client for as long as one of them may still send.
    func invalidate()
}

/// A running exchange started by a ``Transport``.
protocol TransportTask: Sendable {
    /// Stops the exchange. The delegate still receives its completion (with a cancellation
    /// error), unless it had already completed.
    func cancel()
    /// Stops reading the response body (backpressure): bytes wait in the connection, not in memory.
    func pauseReceiving()
    /// Reads the response body again after ``pauseReceiving()``.
    func resumeReceiving()
}

/// Receives the events of one transport task. Calls for one task never overlap: all of them
/// run on the transport's ``Transport/executor``.
protocol TransportTaskDelegate: AnyObject, Sendable {
    /// The response head arrived. Called once per task, before any body chunk.
    func transportDidReceive(response: HTTPResponseHead)
    /// A chunk of the response body arrived.
    func transportDidReceive(data: Data)
    /// Request body bytes were written to the connection.
    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64)
    /// The server asks for credentials: `.useCredential` with one, or `.cancelAuthenticationChallenge`.
    /// The transport passes nothing else on, so a 401 can never hang.
    func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?)
    /// The transport measured the exchange; called just before `transportDidComplete`, by
    /// transports that can (the curl transport).
    func transportDidCollect(metrics: TransferMetrics)
    /// The exchange ended. `response` is the last response head seen, if any. `error` is
    /// decided by the transport (`CurlErrors`, `URLSessionErrors`): a ``ConveyorError`` where
    /// the transport knows the meaning (a refused certificate, a pin, a bad body file), else a
    /// `URLError` in the one vocabulary both transports share. No layer above reads its text.
    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?)
    /// Asked after each body chunk by transports that can pause from inside their receive
    /// callback (the curl transport): whether the consumer asked for a pause before it could
    /// reach the task — ``TransportTask/pauseReceiving()`` needs the task, which its owner
    /// stores only once `startTask` returned, and bytes can arrive before then.
    var transportWantsPause: Bool { get }
    /// The request waits for a connection (all `maximumConnectionsPerHost` of its origin are
    /// busy, or an HTTP/2 connection is being set up): not idleness, so the idle timeout does
    /// not run. Called by transports that can tell (the curl transport), before the request
    /// is queued, and followed by ``transportDidLeaveConnectionQueue()``.
    func transportAwaitsConnection()
    /// The request resolves a name, opens a socket or has a connection: idleness counts again.
    func transportDidLeaveConnectionQueue()
}

// No default implementations: a wrapper that forgot one would silently swallow it (the
// cache's exchange did not pass the connection-queue callbacks on, so with a cache the idle
// timer counted a wait for a connection as silence; found through the event monitors' attack).
// Every delegate says what it does with each callback.

/// The task of a request a transport refused to send.
struct RefusedTransportTask: TransportTask {
    func cancel() {}

    /// A task that never ran: its delegate hears `error` right away (asynchronously, as from a
    /// real task, on the transport's executor), so a transport refuses a request with a typed
    /// error before a byte is sent.
    static func refusing(_ error: ConveyorError, delegate: any TransportTaskDelegate, on executor: any TransferExecutor)
        -> RefusedTransportTask
    {
        executor.execute(urgent: false) { delegate.transportDidComplete(response: nil, error: error) }
        return RefusedTransportTask()
    }
}

extension TransportTask {
    /// Tasks with no connection to read from (refused, answered from the cache) ignore it.
    func pauseReceiving() {}
    /// See ``pauseReceiving()``.
    func resumeReceiving() {}
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Lets at most `limit` requests per ``Origin`` into a transport that cannot say when a queued
/// request gets its connection (corelibs URLSession on Linux); the rest wait here, in order.
///
/// Why: URLSession queues requests beyond `httpMaximumConnectionsPerHost` inside itself, and an
/// operation's idle timer cannot tell that wait from a silent server — with one connection busy
/// for 3 s and a 1 s idle limit, the next request failed after 1 s. A request waiting here has
/// not started: its delegate hears ``TransportTaskDelegate/transportAwaitsConnection()``, and
/// ``TransportTaskDelegate/transportDidLeaveConnectionQueue()`` when it goes.
final class ConnectionAdmission: Sendable {
    // Sendable, checked by the compiler: the counts and queues sit behind `state`, one lock;
    // `limit` is immutable.

    private struct Waiting {
        let id: Int
        let start: @Sendable () -> Void
    }

    private struct State {
        var running: [Origin: Int] = [:]
        var waiting: [Origin: [Waiting]] = [:]
        var nextID = 0
    }

    /// Requests per origin at once: the session's connections per host.
    let limit: Int
    private let state = Lock(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// A number naming one request in line, for ``admit(_:ticket:start:)`` and ``withdraw(_:from:)``.
    func makeTicket() -> Int {
        state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
    }

    /// Runs `start` now if `origin` has a free place, or later, in order, when one frees.
    /// The ticket is the caller's before the request is in line, so it can always be withdrawn.
    func admit(_ origin: Origin, ticket: Int, start: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.running[origin, default: 0] < limit {
                state.running[origin, default: 0] += 1
                return true
            }
            state.waiting[origin, default: []].append(Waiting(id: ticket, start: start))
            return false
        }
        if now { start() }
    }

    /// A request of `origin` ended: its place goes to the first one waiting.
    func release(_ origin: Origin) {
        let next = state.withLock { state -> Waiting? in
            if var queue = state.waiting[origin], !queue.isEmpty {
                let first = queue.removeFirst()
                state.waiting[origin] = queue.isEmpty ? nil : queue
                return first  // the place passes on: `running` stays as it is
            }
            let count = state.running[origin, default: 1] - 1
            state.running[origin] = count > 0 ? count : nil
            return nil
        }
        next?.start()
    }

    /// Takes a waiting request out of line.
    /// - Returns: Whether it was still waiting (false: it has started, or was withdrawn).
    func withdraw(_ ticket: Int, from origin: Origin) -> Bool {
        state.withLock { state in
            guard var queue = state.waiting[origin], let index = queue.firstIndex(where: { $0.id == ticket }) else { return false }
            queue.remove(at: index)
            state.waiting[origin] = queue.isEmpty ? nil : queue
            return true
        }
    }
}

/// A URLSession task that may still be waiting for its place (``ConnectionAdmission``).
final class AdmittedTransportTask: TransportTask, Sendable {
    // Sendable, checked by the compiler: `phase` is behind one lock; the rest is immutable.

    enum Phase {
        case waiting
        case running(URLSessionTask)
        case cancelled
    }

    let admission: ConnectionAdmission
    let origin: Origin
    let delegate: any TransportTaskDelegate
    /// What the task holds; it takes the place once given, and ends the task.
    let release: AttemptRelease
    let delegateQueue: OperationQueue
    /// Where the URLSession task is created and resumed once the place is given (see
    /// ``URLSessionTransport``'s `starter`); nil: on the thread that gives the place.
    let starter: DispatchQueue?
    /// Its place in line at ``admission``.
    let ticket: Int
    private let phase = Lock(Phase.waiting)

    init(
        admission: ConnectionAdmission, origin: Origin, delegate: any TransportTaskDelegate, release: AttemptRelease,
        delegateQueue: OperationQueue, starter: DispatchQueue? = nil
    ) {
        self.admission = admission
        self.origin = origin
        self.delegate = delegate
        self.release = release
        self.delegateQueue = delegateQueue
        self.starter = starter
        ticket = admission.makeTicket()
    }

    /// Asks for a place; `makeTask` creates and resumes the URLSession task once there is one.
    func enqueue(_ makeTask: @escaping @Sendable () -> URLSessionTask) {
        delegate.transportAwaitsConnection()
        admission.admit(origin, ticket: ticket) { [self] in
            let go = phase.withLock { phase -> Bool in
                if case .cancelled = phase { return false }
                return true
            }
            // Cancelled while its place was being handed over: pass the place on, and complete.
            guard go else {
                admission.release(origin)
                let (delegate, release) = (delegate, release)
                delegateQueue.addOperation { release.complete(delegate, response: nil, error: URLError(.cancelled)) }
                return
            }
            // Given back when the task completes.
            release.hold(admission: admission, origin: origin)
            delegate.transportDidLeaveConnectionQueue()
            // A cancel until the task exists finds the phase still waiting (and out of line):
            // it marks it cancelled, and the task is cancelled as soon as it is made.
            let create: @Sendable () -> Void = { [self] in
                let task = makeTask()
                let keep = phase.withLock { phase -> Bool in
                    if case .cancelled = phase { return false }
                    phase = .running(task)
                    return true
                }
                if !keep { task.cancelInDelegateOrder(on: delegateQueue) }
            }
            if let starter { starter.async(execute: create) } else { create() }
        }
    }

    func cancel() {
        let previous = phase.withLock { phase -> Phase in
            defer { if case .waiting = phase { phase = .cancelled } }
            return phase
        }
        switch previous {
        case .running(let task):
            task.cancelInDelegateOrder(on: delegateQueue)
        case .waiting:
            // Never started: it completes here, as a URLSession task cancelled early would.
            if admission.withdraw(ticket, from: origin) {
                let (delegate, release) = (delegate, release)
                delegateQueue.addOperation { release.complete(delegate, response: nil, error: URLError(.cancelled)) }
            }
        case .cancelled:
            break
        }
    }

    #if canImport(FoundationNetworking)
        // See URLSessionTransportTask: corelibs cannot pause a data task.
        func pauseReceiving() {}
        func resumeReceiving() {}
    #else
        func pauseReceiving() {
            if case .running(let task) = phase.withLock({ $0 }) { task.suspend() }
        }
        func resumeReceiving() {
            if case .running(let task) = phase.withLock({ $0 }) { task.resume() }
        }
    #endif
}

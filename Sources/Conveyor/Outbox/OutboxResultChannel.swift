import ConveyorLocking
import Foundation

/// Hands results to the one consumer — a handler or an iterator — and tells the outbox when a
/// result was taken (`acknowledge`), so the item's files go only after that.
final class OutboxResultChannel: Sendable {
    // Sendable, checked by the compiler: all mutable state is in `state`, behind one Lock.

    /// A result (its record already marked on disk as being handed over) and what to do once it was.
    struct Pending: Sendable {
        let result: Outbox.ItemResult
        let acknowledge: @Sendable () -> Void
    }

    private struct State {
        var handler: (@Sendable (Outbox.ItemResult) -> Void)?
        var iterating = false
        /// Results waiting for a consumer, in the order they came. Bounded by the outbox's
        /// concurrent deliveries: an item's slot is not freed before its result is taken.
        var ready: [Pending] = []
        var waiter: CheckedContinuation<Pending?, Never>?
        /// The result the iterator's loop body has: handed over when it asks for the next one,
        /// leaves the loop, or the outbox is closed.
        var taken: Pending?
        var closed = false
        var onConsumer: (@Sendable () -> Void)?
        /// The result a handler is running with: handed over when the handler returns, or at
        /// `close()`, whichever comes first (`close()` from elsewhere waits for the return).
        var running: Pending?
    }
    private let state = Lock(State())
    /// Handlers run here, one result at a time, in order: a serial queue on the client's
    /// callback queue (the main queue on Apple platforms), as completion blocks run.
    private let handlerQueue: DispatchQueue
    /// Holds a handler call from its start (under the lock, while open) until its result was
    /// acknowledged: `close()` waits on it, so no handler runs once `close()` has returned.
    private let handling = DispatchGroup()
    /// Marks `handlerQueue` with this channel's identity, so that `close()` knows when it is
    /// called from one of its own handlers (waiting for that handler would never end).
    private static let handlerKey = DispatchSpecificKey<ObjectIdentifier>()

    init(callbackQueue: DispatchQueue) {
        handlerQueue = DispatchQueue(label: "org.conveyor.outbox.results", target: callbackQueue)
        handlerQueue.setSpecific(key: Self.handlerKey, value: ObjectIdentifier(self))
    }

    /// Called when the first consumer registers (the outbox starts delivering).
    var onConsumer: (@Sendable () -> Void)? {
        get { state.withLock { $0.onConsumer } }
        set { state.withLock { $0.onConsumer = newValue } }
    }

    /// Hands `pending` to the consumer, or keeps it until there is one.
    func offer(_ pending: Pending) {
        enum Action {
            case keep
            case handle(@Sendable (Outbox.ItemResult) -> Void)
            case resume(CheckedContinuation<Pending?, Never>)
        }
        let action = state.withLock { state -> Action in
            guard !state.closed else { return .keep }
            if let handler = state.handler { return .handle(handler) }
            if let waiter = state.waiter {
                state.waiter = nil
                state.taken = pending
                return .resume(waiter)
            }
            state.ready.append(pending)
            return .keep
        }
        switch action {
        case .keep: break
        case .handle(let handler): handOver(pending, to: handler)
        case .resume(let waiter):
            waiter.resume(returning: pending)
        }
    }

    /// Sets (or removes) the handler; results already waiting go to it.
    func setHandler(_ handler: (@Sendable (Outbox.ItemResult) -> Void)?) {
        let (waiting, start) = state.withLock { state -> ([Pending], (@Sendable () -> Void)?) in
            state.handler = handler
            guard handler != nil, !state.closed else { return ([], nil) }
            defer { state.ready = [] }
            return (state.ready, state.onConsumer)
        }
        if let handler { for pending in waiting { handOver(pending, to: handler) } }
        start?()
    }

    private func handOver(_ pending: Pending, to handler: @escaping @Sendable (Outbox.ItemResult) -> Void) {
        handlerQueue.async { [self] in
            // Closed before this call began: the handler is not called, and the item stays on
            // disk for the next owner (which hands it over, flagged as a redelivery).
            let starts = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.running = pending
                handling.enter()
                return true
            }
            guard starts else { return }
            handler(pending.result)
            // Acknowledged here unless `close()` from inside the handler did it already.
            let running = state.withLock { state -> Pending? in
                defer { state.running = nil }
                return state.running
            }
            running?.acknowledge()
            handling.leave()
        }
    }

    /// Returns once every handler call queued so far has run.
    func flush() {
        handlerQueue.sync {}
    }

    /// Registers an iterator; false when another one is already iterating.
    func registerIterator() -> Bool {
        let start = state.withLock { state -> (@Sendable () -> Void)?? in
            guard !state.iterating, !state.closed else { return .none }
            state.iterating = true
            return .some(state.onConsumer)
        }
        guard let start else { return false }
        start?()
        return true
    }

    /// The iterator left: the result its loop had is handed over.
    func unregisterIterator() {
        acknowledgeTaken()
        state.withLock { $0.iterating = false }
    }

    /// Counts the result the iterator's loop has as handed over.
    func acknowledgeTaken() {
        let taken = state.withLock { state -> Pending? in
            defer { state.taken = nil }
            return state.taken
        }
        taken?.acknowledge()
    }

    /// The next result for the iterator; nil once the outbox closed or the Task was cancelled.
    func take() async -> Pending? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Pending?, Never>) in
                let immediate = state.withLock { state -> Pending?? in
                    if state.closed || Task.isCancelled { return .some(nil) }
                    if !state.ready.isEmpty {
                        state.taken = state.ready.removeFirst()
                        return .some(state.taken)
                    }
                    state.waiter = continuation
                    return .none
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Pending?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// No more results: the result a loop has counts as handed over, a waiting iterator gets
    /// nil, a handler running is waited for and its result counts as handed over, handlers not
    /// yet begun are not called, and results not handed over stay on disk.
    ///
    /// Called from inside a handler of this channel, it does not wait for that handler (it
    /// would wait for itself): the result the handler has counts as handed over at once, as a
    /// loop body's does.
    func close() {
        acknowledgeTaken()
        let insideHandler = DispatchQueue.getSpecific(key: Self.handlerKey) == ObjectIdentifier(self)
        let (waiter, running) = state.withLock { state -> (CheckedContinuation<Pending?, Never>?, Pending?) in
            state.closed = true
            state.ready = []
            defer {
                state.waiter = nil
                if insideHandler { state.running = nil }
            }
            return (state.waiter, insideHandler ? state.running : nil)
        }
        waiter?.resume(returning: nil)
        running?.acknowledge()
        if !insideHandler { handling.wait() }
    }
}

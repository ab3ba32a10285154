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
    }
    private let state = Lock(State())
    /// Handlers run here, one result at a time, in order: a serial queue on the client's
    /// callback queue (the main queue on Apple platforms), as completion blocks run.
    private let handlerQueue: DispatchQueue

    init(callbackQueue: DispatchQueue) {
        handlerQueue = DispatchQueue(label: "org.conveyor.outbox.results", target: callbackQueue)
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
        handlerQueue.async {
            handler(pending.result)
            pending.acknowledge()
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
    /// nil, and results not handed over stay on disk.
    func close() {
        acknowledgeTaken()
        let waiter = state.withLock { state -> CheckedContinuation<Pending?, Never>? in
            state.closed = true
            state.ready = []
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}

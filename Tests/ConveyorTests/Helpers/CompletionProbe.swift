import Conveyor
import ConveyorLocking
import Foundation

/// What an operation's completion reported.
enum Outcome: Sendable {
    case success(Data?)
    case failure(ConveyorError)

    var error: ConveyorError? { if case .failure(let error) = self { error } else { nil } }
    var data: Data? { if case .success(let data) = self { data } else { nil } }
}

/// Records every call of an operation's success and failure blocks, on its own serial queue,
/// and lets a test await the first one.
final class CompletionProbe: Sendable {
    let queue = DispatchQueue(label: "test.completion-probe")
    private struct State {
        var outcomes: [Outcome] = []
        var waiters: [CheckedContinuation<Outcome, Never>] = []
        var onQueue: [Bool] = []
        var firstAt: ContinuousClock.Instant?
    }
    private let state = Lock(State())
    private let key = DispatchSpecificKey<Bool>()

    init() { queue.setSpecific(key: key, value: true) }

    var success: HTTPRequestOperation.Success {
        { [self] operation, _ in record(.success(operation.responseData)) }
    }

    var failure: HTTPRequestOperation.Failure {
        { [self] _, error in record(.failure(error)) }
    }

    /// Sets the blocks and the callback queue on `operation`.
    func attach(to operation: HTTPRequestOperation) {
        operation.callbackQueue = queue
        operation.setCompletionBlock(success: success, failure: failure)
    }

    private func record(_ outcome: Outcome) {
        let onQueue = DispatchQueue.getSpecific(key: key) == true
        let now = ContinuousClock.now
        let waiters = state.withLock { state in
            if state.firstAt == nil { state.firstAt = now }
            state.outcomes.append(outcome)
            state.onQueue.append(onQueue)
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume(returning: outcome) }
    }

    /// The first outcome, awaited.
    func outcome() async -> Outcome {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Outcome? in
                if let first = state.outcomes.first { return first }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// How many times a completion block ran so far, after every block already scheduled has run.
    ///
    /// A duplicate scheduled later is not counted: "exactly once" is `settledCallCount`.
    var callCount: Int {
        queue.sync {}
        return state.withLock { $0.outcomes.count }
    }

    /// How long after the first completion a late duplicate would still be seen.
    static let duplicateGrace: Duration = .milliseconds(500)

    /// How many times a completion block ran, counted once `duplicateGrace` has passed since the
    /// first one ran (or at once when none ran): "exactly once" means once, and not again within
    /// the grace.
    ///
    /// The wait is no synchronisation: the test already has its outcome; this only leaves a late
    /// duplicate the time to show itself. A loaded machine can only make a duplicate slip past
    /// the grace — it cannot make a correct operation fail the count.
    var settledCallCount: Int {
        get async {
            if let first = firstCompletionTime {
                try? await Task.sleep(until: first + Self.duplicateGrace, clock: .continuous)
            }
            return callCount
        }
    }

    /// When the first completion block ran: timing measured here does not include how long a
    /// busy test run took to resume the awaiting test.
    var firstCompletionTime: ContinuousClock.Instant? { state.withLock { $0.firstAt } }

    /// Whether the caller runs on `queue`.
    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

    /// Whether every block ran on `queue`.
    var allOnQueue: Bool { state.withLock { $0.onQueue.allSatisfy { $0 } } }
}

/// Counts concurrently.
final class Counter: Sendable {
    private let value = Lock(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

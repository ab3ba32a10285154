import Conveyor
import Synchronization

/// Records completion calls (nil for success) and lets a test await the first.
final class Completions: Sendable {
    private struct State {
        var calls: [ConveyorError?] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    func add(_ error: ConveyorError?) {
        let waiters = state.withLock { state in
            state.calls.append(error)
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    func first() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if !state.calls.isEmpty { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    var all: [ConveyorError?] { state.withLock { $0.calls } }
}

/// When a completion block ran.
final class FinishTime: Sendable {
    private let storage = Mutex<ContinuousClock.Instant?>(nil)
    func mark() { storage.withLock { $0 = .now } }
    var instant: ContinuousClock.Instant? { storage.withLock { $0 } }
}

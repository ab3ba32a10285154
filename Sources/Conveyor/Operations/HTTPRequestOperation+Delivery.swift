import Foundation

extension HTTPRequestOperation {
    /// Marks the completion block as run (or absent) and calls what waits for that. `finish`
    /// calls it once, after the block returned — on the callback queue, or inline for async
    /// callers, whose block resumes their continuation.
    func completionDelivered() {
        transfer { $0.completionRan() }.forEach { $0() }
    }

    /// Calls `body` once the completion block has run: at once when it has, else right after it,
    /// on the thread that ran it. An operation that never finishes never calls it.
    func whenCompletionDelivered(_ body: @escaping @Sendable () -> Void) {
        if !transfer({ $0.whenCompletionRuns(body) }) { body() }
    }
}

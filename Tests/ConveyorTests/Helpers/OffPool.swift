import Foundation

/// Runs CPU-heavy test work (parsing or comparing tens of megabytes in a debug build) on a
/// thread of its own: Swift Concurrency's cooperative pool has two threads on this machine,
/// and seconds of work there delay every other test's timers and continuations (seen: a 0.2 s
/// reconnection delay took 10 s while the pool was busy).
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

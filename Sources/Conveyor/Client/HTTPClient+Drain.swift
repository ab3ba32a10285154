import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// What ``drain(timeout:queued:)`` does with operations that have not started.
    public enum QueuedOperationsPolicy: Sendable {
        /// Fail them with ``ConveyorError/cancelled(reason:)`` `.shuttingDown` (the default).
        case cancel
        /// Leave them queued, unstarted (the queue is suspended), for a later `resume`.
        case keep
    }

    /// Waits until every operation now in the queue has finished, or `timeout` passes.
    ///
    /// Paused operations have not finished: pause none you wait for. (Not built on
    /// `OperationQueue.addBarrierBlock`: corelibs ran a second barrier before the operations
    /// ahead of it had finished.)
    /// - Parameter timeout: Seconds to wait at most.
    /// - Returns: Whether everything finished in time.
    public func waitUntilAllOperationsAreFinished(timeout: TimeInterval) async -> Bool {
        await Self.wait(for: operationQueue.operations.compactMap { $0 as? HTTPRequestOperation }, timeout: timeout)
    }

    /// Blocks the calling thread until every operation has finished, or `timeout` passes (for
    /// command-line tools; never call it on the callback queue).
    /// - Parameter timeout: Seconds to wait at most.
    /// - Returns: Whether everything finished in time.
    public func waitUntilAllOperationsAreFinishedBlocking(timeout: TimeInterval) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        let watch = Self.watchFinishes(of: operationQueue.operations.compactMap { $0 as? HTTPRequestOperation }) { semaphore.signal() }
        defer { watch.stop() }
        return watch.finished || semaphore.wait(timeout: Seconds.dispatchTime(after: timeout)) == .success
    }

    /// Stops the client for shutdown: nothing new starts, running operations may finish within
    /// `timeout`, then the rest are cancelled (`.shuttingDown`). Every completion runs exactly
    /// once and temporary multipart files are removed.
    ///
    /// Paused operations are left as they are. To continue a paused download in the next run,
    /// persist what ``FileDownloadOperation/resumeState`` returns and pass it to
    /// ``FileDownloadOperation/init(request:resuming:destination:options:)``.
    /// - Parameters:
    ///   - timeout: Seconds from now that running operations get.
    ///   - queued: What happens to operations not started yet; default `.cancel`.
    /// - Returns: Whether every running operation finished within `timeout`.
    @discardableResult
    public func drain(timeout: TimeInterval, queued: QueuedOperationsPolicy = .cancel) async -> Bool {
        operationQueue.isSuspended = true
        // Open streams have no end to wait for: they close now.
        for case let stream as HTTPRequestOperation in streams.queue.operations { stream.cancel(reason: .shuttingDown) }
        let operations = operationQueue.operations.compactMap { $0 as? HTTPRequestOperation }
        let waiting = operations.filter { !$0.hasStarted && !$0.isFinished }
        let running = operations.filter { $0.hasStarted && !$0.isFinished && !$0.isPaused }
        if queued == .cancel {
            waiting.forEach { $0.cancel(reason: .shuttingDown) }
            // Cancelled operations finish when the queue starts them.
            operationQueue.isSuspended = false
        }
        let finishedInTime = await Self.wait(for: running, timeout: timeout)
        if !finishedInTime { running.forEach { $0.cancel(reason: .shuttingDown) } }
        if queued == .keep { operationQueue.isSuspended = true }
        return finishedInTime
    }

    /// Waits until every operation finished (its finish notification was posted), or the timeout.
    static func wait(for operations: [HTTPRequestOperation], timeout: TimeInterval) async -> Bool {
        let done = AsyncStream.makeStream(of: Bool.self)
        let watch = watchFinishes(of: operations) { done.continuation.yield(true) }
        defer { watch.stop() }
        if watch.finished { return true }
        afterTimeout(timeout) { done.continuation.yield(false) }
        for await finished in done.stream { return finished }
        return false
    }

    /// Calls `onAllFinished` once the last of `operations` posts its finish notification.
    /// - Returns: Whether all had finished already, and a closure that stops watching.
    static func watchFinishes(
        of operations: [HTTPRequestOperation], onAllFinished: @escaping @Sendable () -> Void
    ) -> (finished: Bool, stop: () -> Void) {
        let remaining = Lock(Set(operations.map(ObjectIdentifier.init)))
        let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidFinish, object: nil, queue: nil) { note in
            guard let operation = note.object as? HTTPRequestOperation else { return }
            if remaining.withLock({ $0.remove(ObjectIdentifier(operation)) != nil && $0.isEmpty }) { onAllFinished() }
        }
        // Some may have finished before the observer was added.
        for operation in operations where operation.isFinished {
            _ = remaining.withLock { $0.remove(ObjectIdentifier(operation)) }
        }
        return (remaining.withLock { $0.isEmpty }, { NotificationCenter.default.removeObserver(observer) })
    }

    /// Runs `work` after `seconds` on a dispatch timer: the outcome (finished or timed out) is
    /// decided when the time comes, even if the awaiting Task's executor is busy.
    static func afterTimeout(_ seconds: TimeInterval, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: Seconds.dispatchTime(after: seconds), execute: work)
    }
}

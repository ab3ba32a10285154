import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// What ``drain(timeout:queued:completionGrace:)`` does with operations that have not started.
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

    /// How long ``drain(timeout:queued:completionGrace:)`` waits by default, after its `timeout`, for the completion blocks
    /// of the operations it waited for or cancelled to run: 2 seconds. They are scheduled on
    /// the callback queue by then; this bounds the wait when that queue is busy or never runs
    /// (`DispatchQueue.main` in a Linux program whose main thread blocks).
    public static let drainCompletionGrace: TimeInterval = 2

    /// Stops the client for shutdown: nothing new starts, running operations may finish within
    /// `timeout`, then the rest are cancelled (`.shuttingDown`). Every completion runs exactly
    /// once and temporary multipart files are removed.
    ///
    /// Returns once the outcomes have been heard: the completion blocks of every operation it
    /// waited for or cancelled — open streams and, with `.cancel`, queued operations included —
    /// have run on their callback queue (an async caller's continuation has been resumed), and
    /// so has what was scheduled on the callback queues before (a batch's `completion`), so a
    /// process may exit right after (``GracefulShutdown`` does). That wait is bounded: at most
    /// `completionGrace` after `timeout`.
    ///
    /// Paused operations are left as they are. To continue a paused download in the next run,
    /// persist what ``FileDownloadOperation/resumeState`` returns and pass it to
    /// ``FileDownloadOperation/init(request:resuming:destination:options:)``.
    /// - Parameters:
    ///   - timeout: Seconds from now that running operations get.
    ///   - queued: What happens to operations not started yet; default `.cancel`.
    ///   - completionGrace: Seconds after `timeout` that the completion blocks get to run;
    ///     default ``drainCompletionGrace`` (2 s). Longer for blocks that do real work (a
    ///     database write) on a busy machine.
    /// - Returns: Whether every running operation finished within `timeout` and every
    ///   completion block ran within the grace after it.
    @discardableResult
    public func drain(
        timeout: TimeInterval, queued: QueuedOperationsPolicy = .cancel, completionGrace: TimeInterval = drainCompletionGrace
    ) async -> Bool {
        operationQueue.isSuspended = true
        // Open streams have no end to wait for: they close now.
        let streamOperations = streams.queue.operations.compactMap { $0 as? HTTPRequestOperation }
        streamOperations.forEach { $0.cancel(reason: .shuttingDown) }
        let operations = operationQueue.operations.compactMap { $0 as? HTTPRequestOperation }
        let waiting = operations.filter { !$0.hasStarted && !$0.isFinished }
        let running = operations.filter { $0.hasStarted && !$0.isFinished && !$0.isPaused }
        // Finished before the drain but still listed: their blocks may still be on the queue.
        let finished = operations.filter(\.isFinished)
        if queued == .cancel {
            waiting.forEach { $0.cancel(reason: .shuttingDown) }
            // Cancelled operations finish when the queue starts them.
            operationQueue.isSuspended = false
        }
        let finishedInTime = await Self.wait(for: running, timeout: timeout)
        if !finishedInTime { running.forEach { $0.cancel(reason: .shuttingDown) } }
        let outcomes = streamOperations + running + finished + (queued == .cancel ? waiting : [])
        let heard = await Self.waitForCompletions(
            of: outcomes, queues: [configuration.callbackQueue], timeout: completionGrace)
        if queued == .keep { operationQueue.isSuspended = true }
        return finishedInTime && heard
    }

    /// Waits until the completion block of every one of `operations` has run, then until each
    /// of `queues` (and the operations' callback queues) has run what was scheduled on it
    /// before — a batch's `progress` and `completion`, which those blocks schedule, or the
    /// block of an operation that finished just before the drain — or until `timeout` passes.
    static func waitForCompletions(of operations: [HTTPRequestOperation], queues: [DispatchQueue], timeout: TimeInterval) async -> Bool {
        let deadline = Seconds.dispatchTime(after: timeout)
        var seen = Set<ObjectIdentifier>()
        let distinct = operations.filter { seen.insert(ObjectIdentifier($0)).inserted }
        // Nothing to hear: no queue is waited for (one that never runs would cost the grace).
        guard !distinct.isEmpty else { return true }
        let delivered = await waitForAll(distinct.count, until: deadline) { done in
            for operation in distinct { operation.whenCompletionDelivered(done) }
        }
        guard delivered else { return false }
        var seenQueues = Set<ObjectIdentifier>()
        let callbackQueues = (queues + distinct.map(\.callbackQueue)).filter { seenQueues.insert(ObjectIdentifier($0)).inserted }
        return await waitForAll(callbackQueues.count, until: deadline) { done in
            // A barrier waits for everything before it on a queue of one's own, serial or not.
            for queue in callbackQueues { queue.async(flags: .barrier, execute: done) }
        }
    }

    /// Runs `start` with a closure to call `count` times; returns true once it has been, false
    /// at `deadline` if it has not.
    private static func waitForAll(
        _ count: Int, until deadline: DispatchTime, _ start: (@escaping @Sendable () -> Void) -> Void
    ) async -> Bool {
        guard count > 0 else { return true }
        let outcome = AsyncStream.makeStream(of: Bool.self)
        let remaining = Lock(count)
        start {
            let last = remaining.withLock { remaining -> Bool in
                remaining -= 1
                return remaining == 0
            }
            if last { outcome.continuation.yield(true) }
        }
        DispatchQueue.global().asyncAfter(deadline: deadline) { outcome.continuation.yield(false) }
        for await finished in outcome.stream { return finished }
        return false
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

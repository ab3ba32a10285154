import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// Called after each operation of a batch finished (and its own completion block ran),
    /// with the number finished so far and the batch's size.
    public typealias BatchProgress = @Sendable (_ finished: Int, _ total: Int) -> Void

    /// Called once every operation of a batch has finished and its completion block has run.
    public typealias BatchCompletion = @Sendable (_ operations: [HTTPRequestOperation]) -> Void

    /// Enqueues operations as a batch (AFNetworking's `enqueueBatchOfHTTPRequestOperations:`).
    ///
    /// Failures and cancellations count as finished. `progress` and `completion` run on the
    /// client's callback queue, each after the completion blocks that caused it; an empty batch
    /// completes at once.
    /// - Parameters:
    ///   - operations: The operations; their own completion blocks still run.
    ///   - progress: Called after each operation; nil for none.
    ///   - completion: Called once with all operations; nil for none.
    /// - Returns: A `Progress` for the whole batch (one unit per operation).
    @discardableResult
    public func enqueueBatch(
        _ operations: [HTTPRequestOperation], progress: BatchProgress? = nil, completion: BatchCompletion? = nil
    ) -> Progress {
        let overall = Progress(totalUnitCount: Int64(operations.count))
        let queue = configuration.callbackQueue
        guard !operations.isEmpty else {
            queue.async { completion?([]) }
            return overall
        }
        let finished = Lock(0)
        let total = operations.count
        // The caller holds `overall` too; `Progress` synchronizes itself, and is wrapped so that
        // the capture does not rest on the SDK marking it `Sendable`.
        let reported = LockedReference(overall)
        let report: @Sendable () -> Void = {
            let count = finished.withLock { count -> Int in
                count += 1
                return count
            }
            queue.async {
                reported.value.completedUnitCount = Int64(count)
                progress?(count, total)
                if count == total { completion?(operations) }
            }
        }
        for operation in operations {
            let (success, failure) = operation.mutableState.withLock { ($0.success, $0.failure) }
            operation.setCompletionBlock(
                success: { operation, value in
                    success?(operation, value)
                    report()
                },
                failure: { operation, error in
                    failure?(operation, error)
                    report()
                })
        }
        operations.forEach(enqueue)
        return overall
    }

    /// Builds an operation for each request and enqueues them as a batch.
    /// - Parameters:
    ///   - requests: The requests.
    ///   - progress: Called after each operation; nil for none.
    ///   - completion: Called once with all operations; nil for none.
    /// - Returns: A `Progress` for the whole batch.
    @discardableResult
    public func enqueueBatch(
        requests: [URLRequest], progress: BatchProgress? = nil, completion: BatchCompletion? = nil
    ) -> Progress {
        enqueueBatch(requests.map { operation(with: $0, success: nil, failure: nil) }, progress: progress, completion: completion)
    }

    /// Sends the requests as a batch and returns each one's outcome, in the order given.
    /// Cancelling the Task cancels every operation still running.
    /// - Parameter requests: The requests.
    /// - Returns: One result per request.
    public func batch(_ requests: [URLRequest]) async -> [Result<HTTPResponse<Data>, ConveyorError>] {
        let operations = requests.map { request -> HTTPRequestOperation in
            let operation = operation(with: request, success: nil, failure: nil)
            operation.responseSerializer = DataResponseSerializer()
            return operation
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                enqueueBatch(operations, completion: { _ in continuation.resume() })
            }
        } onCancel: {
            operations.forEach { $0.cancel() }
        }
        return operations.map { operation in
            HTTPResponse<Data>.finished(operation, value: operation.responseData ?? Data())
        }
    }
}

import ConveyorLocking

/// Connects an awaiting Task's cancellation to the operation it waits for, whichever of the
/// two (the operation being created, the Task being cancelled) happens first.
final class OperationCancellationBox: Sendable {
    private struct State {
        var operation: HTTPRequestOperation?
        var cancelled = false
    }
    private let state = Lock(State())

    func set(_ operation: HTTPRequestOperation) {
        let cancelled = state.withLock { state -> Bool in
            state.operation = operation
            return state.cancelled
        }
        if cancelled { operation.cancel() }
    }

    func cancel() {
        let operation = state.withLock { state -> HTTPRequestOperation? in
            state.cancelled = true
            return state.operation
        }
        operation?.cancel()
    }
}

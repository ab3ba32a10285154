import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The body of one URLSession task, sent through ``BodyStreamPump``s: one for the task's first
/// send, and a new one, reading the body from its start, each time URLSession asks for the body
/// again (`urlSession(_:task:needNewBodyStream:)`: an authentication challenge, a connection
/// that closed before the request was sent).
///
/// Conveyor's own body streams start over (``RestartableBodyStream``); a caller's stream cannot
/// be read twice, so the answer is nil, and URLSession fails the task.
final class PumpedRequestBody: @unchecked Sendable {
    // @unchecked Sendable: the only mutable state is `state`, behind one Lock; `source` is
    // handed to one pump only (later pumps read restarted copies of it).

    private struct State {
        var sourceTaken = false
        var ended = false
        var pump: BodyStreamPump?
        var failure: (any Error)?
        var cancelTask: (@Sendable () -> Void)?
    }
    private let state = Lock(State())
    private let source: InputStream

    /// - Parameter source: The request's body stream, unopened.
    init(source: InputStream) {
        self.source = source
    }

    /// Sets how the task is cancelled when the body fails (the task is made after the body).
    func attach(cancelTask: @escaping @Sendable () -> Void) {
        state.withLock { $0.cancelTask = cancelTask }
    }

    /// Why the body failed, once a pump's source has: what the task's failure is reported as.
    var failure: (any Error)? { state.withLock { $0.failure } }

    /// A stream for URLSession to read the body from, its first byte on, fed by a new pump (the
    /// previous one is stopped); nil when the body cannot be read again, has ended, or no
    /// stream pair can be made.
    func makeStream() -> InputStream? {
        let (first, ended) = state.withLock { state in
            defer { state.sourceTaken = true }
            return (!state.sourceTaken, state.ended)
        }
        guard !ended else { return nil }
        guard let body = first ? source : (source as? any RestartableBodyStream)?.restartedBodyStream() else { return nil }
        guard let pair = BoundStreamPair() else {
            let error = URLError.bodyStreamExhausted("no stream pair for the request body")
            state.withLock { if $0.failure == nil { $0.failure = error } }
            return nil
        }
        let pump = BodyStreamPump(source: body, pair: pair) { [weak self] error in self?.sourceDidFail(error) }
        let (previous, installed) = state.withLock { state -> (BodyStreamPump?, Bool) in
            guard !state.ended else { return (nil, false) }
            defer { state.pump = pump }
            return (state.pump, true)
        }
        previous?.cancel()
        // Ended meanwhile: the new pump never starts (its pair closes as it goes away).
        guard installed else { return nil }
        pump.start()
        return pump.stream
    }

    /// Stops the current pump and makes no more: the task was cancelled or completed.
    func cancel() {
        let pump = state.withLock { state in
            state.ended = true
            return state.pump
        }
        pump?.cancel()
    }

    private func sourceDidFail(_ error: any Error) {
        let cancelTask = state.withLock { state in
            if state.failure == nil { state.failure = error }
            return state.cancelTask
        }
        cancelTask?()
    }
}

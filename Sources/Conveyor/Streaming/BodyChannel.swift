import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hands a response's head and body chunks to one consumer as they arrive, holding at most
/// about `limit` bytes ahead of it: past the limit the operation pauses the transfer, and the
/// consumer's pulls resume it once it has taken half of them. The one buffer behind
/// ``HTTPStream``, its lines and its Server-Sent Events.
final class BodyChannel: Sendable {
    // Sendable: all mutable state is in `state`, behind one Mutex; `limit` is immutable and
    // `onResume` is set once, before the first chunk.
    private struct State {
        var chunks: [Data] = []
        var first = 0
        var buffered = 0
        var pushed: Int64 = 0
        var paused = false
        var peakBuffered = 0
        var head: Result<HTTPResponseHead, ConveyorError>?
        var end: Result<Void, ConveyorError>?
        var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
        var chunkWaiter: CheckedContinuation<Data?, any Error>?
        var onResume: (@Sendable () -> Void)?
    }

    /// Bytes held ahead of the consumer before the transfer pauses.
    let limit: Int
    private let state = Lock(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// What to call when the consumer has made room (the operation resumes its task).
    func setOnResume(_ resume: @escaping @Sendable () -> Void) {
        state.withLock { $0.onResume = resume }
    }

    // MARK: - Producer (the operation, on the transport's thread)

    /// The most bytes that ever waited for the consumer (tests of backpressure read it).
    var peakBuffered: Int { state.withLock { $0.peakBuffered } }

    /// Bytes handed over so far.
    var bytesPushed: Int64 { state.withLock { $0.pushed } }

    /// The head of the response whose body will follow.
    func deliver(head: HTTPResponseHead) {
        let waiter = state.withLock { state -> CheckedContinuation<HTTPResponseHead, any Error>? in
            guard state.head == nil else { return nil }
            state.head = .success(head)
            defer { state.headWaiter = nil }
            return state.headWaiter
        }
        waiter?.resume(returning: head)
    }

    /// Adds a chunk. - Returns: Whether the transfer should pause now.
    func push(_ data: Data) -> Bool {
        let (waiter, pause) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, Bool) in
            state.pushed += Int64(data.count)
            if let waiter = state.chunkWaiter {
                state.chunkWaiter = nil
                return (waiter, false)
            }
            state.chunks.append(data)
            state.buffered += data.count
            state.peakBuffered = max(state.peakBuffered, state.buffered)
            let pause = !state.paused && state.buffered >= limit
            if pause { state.paused = true }
            return (nil, pause)
        }
        waiter?.resume(returning: data)
        return pause
    }

    /// Ends the body: with success after the last chunk, or with the operation's error.
    func finish(_ result: Result<Void, ConveyorError>) {
        let (headWaiter, chunkWaiter, end) = state.withLock {
            state -> (
                (CheckedContinuation<HTTPResponseHead, any Error>, ConveyorError)?, CheckedContinuation<Data?, any Error>?,
                Result<Void, ConveyorError>
            )
            in
            if state.end == nil { state.end = result }
            var headWaiter: (CheckedContinuation<HTTPResponseHead, any Error>, ConveyorError)?
            if state.head == nil {
                // Ended before a head was handed over: whoever waits for one hears why.
                let error: ConveyorError
                switch result {
                case .failure(let failure): error = failure
                case .success: error = .network(URLError(.badServerResponse))
                }
                state.head = .failure(error)
                headWaiter = state.headWaiter.map { ($0, error) }
            }
            defer {
                state.headWaiter = nil
                state.chunkWaiter = nil
            }
            return (headWaiter, state.chunks.count > state.first ? nil : state.chunkWaiter, state.end!)
        }
        if let (waiter, error) = headWaiter { waiter.resume(throwing: error) }
        switch end {
        case .success: chunkWaiter?.resume(returning: nil)
        case .failure(let error): chunkWaiter?.resume(throwing: error)
        }
    }

    // MARK: - Consumer

    /// Waits for the head (or the error that ended the operation before one came).
    func head() async throws -> HTTPResponseHead {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<HTTPResponseHead, ConveyorError>? in
                if let head = state.head { return head }
                state.headWaiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready.mapError { $0 as any Error }) }
        }
    }

    /// The next chunk; nil at the end of the body. Throws the operation's error.
    func next() async throws -> Data? {
        try await withCheckedThrowingContinuation { continuation in
            let (outcome, resume) = state.withLock { state -> (Result<Data?, ConveyorError>?, (@Sendable () -> Void)?) in
                if state.first < state.chunks.count {
                    let chunk = state.chunks[state.first]
                    state.chunks[state.first] = Data()
                    state.first += 1
                    state.buffered -= chunk.count
                    if state.first > 64, state.first * 2 > state.chunks.count {
                        state.chunks.removeFirst(state.first)
                        state.first = 0
                    }
                    // Room for half the limit again: let the transfer go on.
                    let resume = state.paused && state.buffered <= limit / 2
                    if resume { state.paused = false }
                    return (.success(chunk), resume ? state.onResume : nil)
                }
                if let end = state.end { return (end.map { nil }, nil) }
                state.chunkWaiter = continuation
                // Nothing left: never leave the transfer paused with an empty buffer.
                let resume = state.paused
                state.paused = false
                return (nil, resume ? state.onResume : nil)
            }
            resume?()
            if let outcome { continuation.resume(with: outcome.mapError { $0 as any Error }) }
        }
    }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Copies a request body from a stream of any class into a ``BoundStreamPair``, on a thread of
/// its own, so URLSession reads a stream of its own kind.
///
/// Apple's URLSession (CFNetwork) schedules a body stream on its run loop and waits for its
/// events: a Swift `InputStream` subclass that overrides only `open`, `read` and `status` (as
/// Conveyor's ``BodyFileStream`` and ``ThrottledInputStream`` do, and as callers' subclasses
/// usually do) gets an abstract-method exception or a stalled upload there. Through the pump,
/// URLSession reads the pair's input instead.
///
/// Its own `Thread`, not the URLSession loader's nor a dispatch queue's: the source may block in
/// `read` (``ThrottledInputStream`` sleeps between packets by design; a caller's stream may
/// wait on anything), which must not hold up other transfers or a worker of the shared
/// dispatch pool; and a thread of its own can block `SIGPIPE`, which a write into a pipe whose
/// reader went away raises on Linux (the write then fails with `EPIPE` instead of ending the
/// process). One thread per streamed upload in flight, gone when its body ends, fails or is
/// cancelled. It holds at most one piece of ``BoundStreamPair/bufferSize`` bytes.
final class BodyStreamPump: @unchecked Sendable {
    // @unchecked Sendable: the only mutable state is `state`, behind one Lock. `source` and
    // `pair` are touched by the pump's thread alone once ``start()`` ran (``cancel()`` uses
    // only ``BoundStreamPair/unblockWriter()``, which reads the pipe's own descriptor).

    /// How a pump ended.
    enum Outcome: Equatable {
        /// The whole source went into the pair, which was then closed.
        case finished
        /// The source failed (``failure`` says why).
        case sourceFailed
        /// The reader went away: a write failed or took nothing.
        case readerGone
        /// ``cancel()`` stopped it.
        case cancelled
    }

    private struct State {
        var cancelled = false
        var outcome: Outcome?
        var failure: (any Error)?
    }
    private let state = Lock(State())
    /// Signalled once, by the first ``cancel()``.
    private let cancelled = DispatchSemaphore(value: 0)
    private let source: InputStream
    private let pair: BoundStreamPair
    /// Called on the pump's thread when the source fails, before the pair is closed: the
    /// transport cancels the task there, so a failed body is never taken for a short one.
    private let sourceDidFail: @Sendable (any Error) -> Void

    /// - Parameters:
    ///   - source: The body, unopened; the pump opens and closes it.
    ///   - pair: Where the body goes.
    ///   - sourceDidFail: Run on the pump's thread with ``failure`` when the source fails.
    init(source: InputStream, pair: BoundStreamPair, sourceDidFail: @escaping @Sendable (any Error) -> Void) {
        self.source = source
        self.pair = pair
        self.sourceDidFail = sourceDidFail
    }

    /// The stream URLSession reads.
    var stream: InputStream { pair.input }

    /// Why the source failed, once it has: a ``ConveyorError`` the source gave (a file body's
    /// ``ConveyorError/bodyFileFailed(reason:)``), else `URLError(.requestBodyStreamExhausted)`
    /// (the curl transport's error for a body stream that fails).
    var failure: (any Error)? { state.withLock { $0.failure } }

    /// Starts the pump's thread.
    func start() {
        let thread = Thread { [self] in
            // Named from inside: corelibs gives the system thread the name of the running
            // thread only. 13 characters: Linux keeps at most 15 (`/proc/self/task/*/comm`).
            Thread.current.name = "conveyor-pump"
            run()
        }
        thread.start()
    }

    /// Stops the pump: it writes nothing more, closes both streams and its thread ends. Called
    /// when the task is cancelled and when it completes; harmless after the pump ended.
    func cancel() {
        let (first, ended) = state.withLock { state in
            defer { state.cancelled = true }
            return (!state.cancelled, state.outcome != nil)
        }
        guard first else { return }
        cancelled.signal()
        if !ended { pair.unblockWriter() }
    }

    private var isCancelled: Bool { state.withLock { $0.cancelled } }

    private func run() {
        #if canImport(Glibc)
            // Blocked for this thread only: a write into a pipe whose reader is gone fails with
            // EPIPE instead. The pending signal is discarded with the thread.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        #endif
        let outcome = pump()
        source.close()
        if outcome == .sourceFailed, let failure {
            sourceDidFail(failure)
            // CFNetwork never blocks on the body: leave the pair open until the task's end closes
            // it, so the short body is never sent as if whole. corelibs blocks its loop in read:
            // there the body must end for that loop to take the task's cancel.
            if pair.readerBlocksOnRead { pair.output.close() } else { waitForCancel() }
        } else {
            pair.output.close()
        }
        state.withLock { $0.outcome = outcome }
    }

    /// Copies the source into the pair until it ends, fails, the reader goes or a cancel.
    private func pump() -> Outcome {
        let size = BoundStreamPair.bufferSize
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        defer { buffer.deallocate() }
        source.open()
        while true {
            if isCancelled { return .cancelled }
            let count = source.read(buffer, maxLength: size)
            // More than asked for is a broken stream (the bytes past `size` are not the body's,
            // and may be past the buffer): a failure, never sent (found by the independent attack).
            if count < 0 || count > size {
                let error = sourceError()
                state.withLock { $0.failure = error }
                return .sourceFailed
            }
            if count == 0 { return .finished }
            var written = 0
            while written < count {
                if isCancelled { return .cancelled }
                let result = pair.output.write(buffer + written, maxLength: count - written)
                // -1: the reader closed or failed; 0: the pair takes nothing more (never retried,
                // which would spin).
                guard result > 0 else { return isCancelled ? .cancelled : .readerGone }
                written += result
            }
        }
    }

    /// The error to report for the source's failure.
    private func sourceError() -> any Error {
        // Only Conveyor's file stream is asked on Linux: corelibs' `streamError` traps when the
        // stream has none (a caller's subclass that does not override it).
        #if canImport(FoundationNetworking)
            let error = (source as? BodyFileStream)?.streamError
        #else
            let error = source.streamStatus == .error ? source.streamError : nil
        #endif
        if let error = error as? ConveyorError { return error }
        return URLError.bodyStreamExhausted("the request body stream failed", underlying: error)
    }

    /// Waits for ``cancel()`` (the task's end, which the source's failure has just asked for),
    /// then ends the body.
    private func waitForCancel() {
        cancelled.wait()
        pair.output.close()
    }
}

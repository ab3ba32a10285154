import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a transfer's events one at a time: the serial context of the transfer's transport.
///
/// Every event of an operation's transfer — the transport's callbacks, its timers, a caller's
/// `cancel()`, `pause()` or `resume()`, the request adapters' and the authenticator's answers,
/// a retry's back-off, the processing queue's result, a consumer that caught up — runs here,
/// so no two of them overlap and each sees the others' effects in one order. The transports
/// already call their delegates on this context, so their events take no hop: the curl
/// transport's is its multi handle's owner (``CurlMultiLoop``), the URLSession transport's the
/// session's serial delegate queue. Events from anywhere else hop onto it with
/// ``run(_:)``; AsyncHTTPClient's `RequestBag` does the same with its event loop.
///
/// The cost, said in the Threads and Queues article: code that runs here (the operation's
/// `didReceive` hooks, a redirect handler, a challenge handler, the built-in serializers on a
/// small body) holds up the events of the client's other transfers.
protocol TransferExecutor: AnyObject, Sendable {
    /// Runs `work` after the work already queued, one piece at a time. `urgent` work (a cancel)
    /// may run before queued body chunks. It may run at once on the calling thread when that
    /// thread can take the context (the curl transport's idle multi handle).
    func execute(urgent: Bool, _ work: @escaping @Sendable () -> Void)

    /// Whether the calling thread is running this executor's work now.
    var isCurrent: Bool { get }
}

extension TransferExecutor {
    /// Runs `work` here and now if the calling thread is the executor's, else hops.
    ///
    /// Inline when current matters: an operation's `didReceive(data:)` hook that calls
    /// `cancel()` and waits for the failure block would wait for ever behind itself.
    func run(urgent: Bool = false, _ work: @escaping @Sendable () -> Void) {
        if isCurrent { work() } else { execute(urgent: urgent, work) }
    }

    /// Stops a debug build when the calling thread is not the executor's (a release build
    /// checks nothing): every entry into a transfer's events says where it must run.
    func assertCurrent(file: StaticString = #fileID, line: UInt = #line) {
        assert(isCurrent, "a transfer event ran off its executor", file: file, line: line)
    }
}

/// Which thread runs an executor's work now: the one check behind ``TransferExecutor/isCurrent``
/// for executors that run their work on a thread of their own choosing.
///
/// A thread identity, not a thread-local flag: `Thread.current.threadDictionary` costs a
/// dictionary lookup per event on corelibs, and one executor is current on one thread at a time.
final class ExecutorThread: Sendable {
    // Sendable, checked by the compiler: the only state is one atomic.
    /// The running thread's `pthread_self()` as an integer; 0 while none runs the work.
    private let current = Atomic<UInt>(0)

    /// Marks the calling thread as the one running the executor's work until `body` returns
    /// (re-entrant: an inner call restores the outer mark).
    func running<T>(_ body: () throws -> T) rethrows -> T {
        let previous = current.exchange(Self.callingThread, ordering: .relaxed)
        defer { current.store(previous, ordering: .relaxed) }
        return try body()
    }

    /// Whether the calling thread runs the executor's work now.
    var isCurrent: Bool { current.load(ordering: .relaxed) == Self.callingThread }

    /// The calling thread's identity.
    private static var callingThread: UInt {
        #if canImport(Darwin)
            UInt(bitPattern: pthread_self())
        #else
            UInt(pthread_self())
        #endif
    }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everything one attempt holds below the operation, in one list, let go of once when the
/// attempt ends: the connection place it was admitted to (``ConnectionAdmission``), the
/// credential values stamped on its request (stored cookies, pinned in ``SentSecrets``), the
/// body file it reads and the pump that feeds its body stream to URLSession.
///
/// A transport (or the cache, for the cookies it stamped) makes one per task and ends the task
/// through it: ``complete(_:response:error:)`` is the task's one way to its delegate's
/// `transportDidComplete`, however the attempt ends (completed, cancelled, superseded, or
/// cancelled while it waited for a place). This replaces a delegate wrapper per thing held
/// (up to four on URLSession), each there only to let its one thing go at the end.
final class AttemptRelease: Sendable {
    // Sendable, checked by the compiler: the mutable state is `held`, behind one Lock.

    private struct Held {
        /// The place taken at ``ConnectionAdmission``, given back once.
        var admission: (admission: ConnectionAdmission, origin: Origin)?
        /// Values pinned in ``SentSecrets`` for the attempt, unpinned once.
        var pinned: [String] = []
        var uploadFile: OpenBodyFile?
        var pump: PumpedRequestBody?
    }
    private let held = Lock(Held())

    init() {}

    /// Backstop: an attempt whose end was never reported lets its pinned values go here.
    deinit { SentSecrets.shared.unpin(held.withLock { $0.pinned }) }

    /// Pins `values` (credential values the request carries, e.g. stamped cookies) in
    /// ``SentSecrets`` until the attempt ends.
    func pin(_ values: [String]) {
        guard !values.isEmpty else { return }
        SentSecrets.shared.pin(values)
        held.withLock { $0.pinned += values }
    }

    /// The attempt took a place of `origin` at `admission`: it is given back when the attempt ends.
    func hold(admission: ConnectionAdmission, origin: Origin) {
        held.withLock { $0.admission = (admission, origin) }
    }

    /// The attempt sends `file` (read through a ``BodyFileStream``): its length is the total to
    /// send, and its failure (it ended early or changed) is what a failed task reports.
    func hold(uploadFile file: OpenBodyFile) {
        held.withLock { $0.uploadFile = file }
    }

    /// The attempt's body goes through `pump`: stopped when the attempt ends, and its source's
    /// failure is what the task reports.
    func hold(pump: PumpedRequestBody) {
        held.withLock { $0.pump = pump }
    }

    /// The pumped body, for URLSession's requests to send it again.
    var pump: PumpedRequestBody? { held.withLock { $0.pump } }

    /// The body file's length: the total to send, which corelibs cannot know (it sees a stream).
    var uploadLength: Int64? { held.withLock { $0.uploadFile?.snapshot.length } }

    /// Ends the attempt: stops the body's pump and gives the connection place back, then tells
    /// `delegate` the outcome, then unpins the values. Each is let go of once; a second call
    /// (none is expected) only reaches the delegate.
    ///
    /// The outcome the delegate hears is the body's own failure when there is one: the pump's
    /// source failed (even when the task reports no error: on Linux the failed body had to be
    /// ended for corelibs' loop to take the cancel, and an answer to the short body can beat
    /// that cancel — measured 3 in 20; it is no answer to the request that was asked for), and
    /// then, for a task that failed, the body file's failure (it ended early or changed) rather
    /// than the abort corelibs makes of it.
    func complete(_ delegate: any TransportTaskDelegate, response: HTTPResponseHead?, error: (any Error)?) {
        let (admission, pump, file) = held.withLock { held in
            defer { held.admission = nil }
            return (held.admission, held.pump, held.uploadFile)
        }
        pump?.cancel()
        if let admission { admission.admission.release(admission.origin) }
        var (response, error) = (response, error)
        if let failure = pump?.failure { (response, error) = (nil, failure) }
        if error != nil, let failure = file?.failure { (response, error) = (nil, failure) }
        // The operation finishing on this call logs its response while the values are held.
        delegate.transportDidComplete(response: response, error: error)
        let pinned = held.withLock { held in
            defer { held.pinned = [] }
            return held.pinned
        }
        SentSecrets.shared.unpin(pinned)
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a started transfer keeps that is not its state (``TransferStateMachine/State``): its
/// task, timers, counters, response, body, errors and metrics. Only ``TransferStateMachine`` holds one (privately), and only once something
/// first happens to the transfer: an operation waiting in a queue carries 8 bytes for it
/// (100,000 queued GETs in `conveyor-bench`: 1.97 → 1.55 kB each).
///
/// A class so that appending a chunk to `data` changes it in place, with no copy of the
/// machine around it.
final class TransferRecord: @unchecked Sendable {
    // @unchecked Sendable: reached only through the ``TransferStateMachine`` that owns it,
    // which lives in the operation's one `Lock` (`mutableState`); nothing keeps a record outside it.

    /// The settings of the current run (see ``ResolvedSettings``): resolved at start and at each resume.
    var settings: ResolvedSettings?
    /// The number of the attempt begun last (``TransferStateMachine/InFlight/number``): events
    /// of an older task (one cancelled by pause, superseded by a retry, a redirect or a replay)
    /// are dropped.
    var attempt: Int = 0
    /// Attempts begun, as the caller counts them (``TransferStateMachine/Attempt/ordinal``).
    var attemptsSent: Int = 0
    var task: (any TransportTask)?
    var response: HTTPResponseHead?
    var data = Data()
    var responseObject: OneWayTransfer<Any?>?
    var error: ConveyorError?
    var preflightError: ConveyorError?
    var cancellationReason: ConveyorError.CancellationReason?
    var appliedCredentialID: String?
    /// Attempts sent again after a credential refresh: at most one, and not retries.
    var credentialReplays: Int = 0
    /// Refreshes waited for before one attempt could be stamped.
    var credentialWaits: Int = 0
    var redirectCount: Int = 0
    /// The request the current attempt's 3xx leads to, decided when its head arrived (the
    /// policy's rules and handler, once); nil when the response is the one delivered.
    var pendingRedirect: URLRequest?
    /// Failed attempts that were retried.
    var retryCount: Int = 0
    /// Body bytes already held (in `data` or the body file) that a `Range` request continues.
    var resumeOffset: Int64 = 0
    /// The `ETag` or `Last-Modified` sent as `If-Range` with that `Range` request.
    var resumeValidator: String?
    /// The whole body's size the kept bytes belong to, when a saved
    /// ``FileDownloadOperation/ResumeState`` said it; -1 when unknown.
    var resumeTotal: Int64 = -1
    var idleTimer: DeadlineTimer?
    var resourceTimer: DeadlineTimer?
    var retryTimer: DeadlineTimer?
    var startDate: Date?
    var startTime: DispatchTime?
    var firstByteTime: DispatchTime?
    var lastActivity: DispatchTime = .now()
    var bytesSent: Int64 = 0
    /// Body bytes of the current response, in memory or in `bodyFile`.
    var bytesReceived: Int64 = 0
    /// Where the current response's body goes when not into `data` (file downloads).
    var bodyFile: ResponseBodyFile?
    /// Chunk bytes handed to the chunk block and not yet handled.
    var chunkBytesPending: Int = 0
    /// Chunk bytes handed to the chunk block in all: they cannot be taken back, so a body that
    /// starts over after them fails (`cannotRestart`), as for an output stream.
    var chunkBytesDelivered: Int64 = 0
    /// `Progress` objects synchronize themselves: handed to callers, updated from the transport.
    var uploadProgressObject: LockedReference<Progress>?
    var downloadProgressObject: LockedReference<Progress>?
    /// The totals last reported, for a `Progress` created mid-transfer.
    var uploadExpected: Int64 = -1
    var downloadExpected: Int64 = -1
    var responseSource: HTTPCache.ResponseSource = .network
    var backgroundTask: BackgroundTaskRequest?
    /// The caller's body stream (not one of Conveyor's, which start over) an attempt sent: it
    /// is read once, so no later attempt may send it again.
    var sentCallerBodyStream: ObjectIdentifier?
    var deliveryWaiters: [@Sendable () -> Void] = []
    var metrics: OperationMetrics?
    var transferMetrics: TransferMetrics?
    /// The credential values the attempts carry, pinned in ``SentSecrets`` until the operation
    /// finishes (empty, allocating nothing, for a request without credentials).
    var pinnedSecrets: [String] = []

    /// Takes every timer, for the caller to cancel outside the lock.
    func takeTimers() -> [DeadlineTimer] {
        defer {
            idleTimer = nil
            resourceTimer = nil
            retryTimer = nil
        }
        return [idleTimer, resourceTimer, retryTimer].compactMap { $0 }
    }
}

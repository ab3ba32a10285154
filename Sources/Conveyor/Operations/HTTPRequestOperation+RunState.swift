import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// The part of an operation's state that only a started operation needs: its transfer,
    /// timers, counters, response, body, errors and metrics. An operation waiting in a queue
    /// carries none of it (100,000 queued GETs in `conveyor-bench`: 1.97 → 1.55 kB each, with
    /// the transport held in 16 bytes) and gets it, in one allocation, when something first
    /// sets one of its fields.
    ///
    /// `MutableState` forwards each field here: `get` reads without allocating, and `_modify`
    /// changes the field in place, so appending to `data` copies no bytes.
    final class RunState: @unchecked Sendable {
        // @unchecked Sendable: reached only through `MutableState`, which lives behind the
        // operation's one `Lock` (`mutableState`); nothing keeps a RunState outside it.
        var response: HTTPResponseHead?
        var data: Data = Data()
        var responseObject: OneWayTransfer<Any?>?
        var appliedCredentialID: String?
        var credentialReplays: Int = 0
        var credentialWaits: Int = 0
        var task: (any TransportTask)?
        var attempt: Int = 0
        var redirectCount: Int = 0
        var retryCount: Int = 0
        var resumeValidator: String?
        var idleTimer: DeadlineTimer?
        var resourceTimer: DeadlineTimer?
        var retryTimer: DeadlineTimer?
        var startDate: Date?
        var startTime: DispatchTime?
        var firstByteTime: DispatchTime?
        var bytesSent: Int64 = 0
        var bytesReceived: Int64 = 0
        var bodyFile: ResponseBodyFile?
        var chunkBytesPending: Int = 0
        /// `Progress` objects synchronize themselves: handed to callers, updated from the transport.
        var uploadProgressObject: LockedReference<Progress>?
        var downloadProgressObject: LockedReference<Progress>?
        var uploadExpected: Int64 = -1
        var downloadExpected: Int64 = -1
        var resumeOffset: Int64 = 0
        /// The whole body's size the kept bytes belong to, when a saved ``FileDownloadOperation/ResumeState``
        /// said it (no response is at hand then to read it from); -1 when unknown.
        var resumeTotal: Int64 = -1
        var lastActivity: DispatchTime = .now()
        var awaitsConnection: Bool = false
        var chunksPaused: Bool = false
        var cancellationReason: ConveyorError.CancellationReason?
        var responseSource: HTTPCache.ResponseSource = .network
        var backgroundTask: BackgroundTaskRequest?
        var completionDelivered: Bool = false
        var deliveryWaiters: [@Sendable () -> Void] = []
        // Inline, not boxed: this object exists only once the operation runs, and a finished
        // operation always has metrics (and, on curl, transfer metrics), so boxes here would
        // only add an allocation each.
        var error: ConveyorError?
        var metrics: OperationMetrics?
        var transferMetrics: TransferMetrics?
        var preflightError: ConveyorError?
        /// The credential values this operation's attempts carry, pinned in ``SentSecrets``
        /// until it finishes (empty, allocating nothing, for a request without credentials).
        var pinnedSecrets: [String] = []
    }
}

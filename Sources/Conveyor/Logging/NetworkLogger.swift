import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Logs requests and responses, for debug builds: AFNetworking's `AFHTTPRequestOperationLogger`.
///
/// ```swift
/// #if DEBUG
/// NetworkLogger.shared.level = .debug
/// NetworkLogger.shared.startLogging()
/// #endif
/// ```
///
/// Started, it observes the operation notifications, so every ``HTTPRequestOperation`` is
/// logged, built by a client or not; or, not started, put it in a client's
/// ``HTTPClient/Configuration/eventMonitors`` to log that client's operations alone (it is an
/// ``EventMonitor``). Nothing is printed until ``startLogging()``; secrets are redacted by
/// default (``redaction``); lines go to a swappable ``sink`` from one serial queue, so entries
/// of concurrent operations never interleave and the operation's thread never waits on I/O.
///
/// | level | logs |
/// |---|---|
/// | `.debug` | everything below, plus headers, bodies (text decoded with the charset, binary summarised, truncated past ``bodyLimit``), the attempt number and a cURL command |
/// | `.info` (default) | `→ GET url` as the first request goes out (after the adapters); `← 200 GET url [0.123 s, 1.2 kB]` on finish; failures with the error; retries |
/// | `.warn` | every failed operation (status codes, timeouts, content types, transport failures), as AFNetworking's logger did; cancellations and the failures ``expectedFailures`` names count as `.info` |
/// | `.error` | network and serialization failures only |
/// | `.off` | nothing |
public final class NetworkLogger: Sendable {
    // Sendable, checked by the compiler: every mutable property is in `state`, behind one Mutex;
    // the queue and clock are immutable.

    /// How much is logged; each level includes the ones after it.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        /// Everything, with headers, bodies and cURL commands.
        case debug
        /// Start and finish of every operation.
        case info
        /// Failures that need attention.
        case warn
        /// Network and serialization failures.
        case error
        /// Nothing.
        case off

        /// Orders by verbosity: `.debug` < `.info` < `.warn` < `.error` < `.off`.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Decides whether an operation is logged: `true` means **log it**.
    public typealias ShouldLog = @Sendable (HTTPRequestOperation) -> Bool

    /// Decides whether a failure is expected: `true` logs it at `.info` instead of `.warn`.
    public typealias ExpectedFailure = @Sendable (HTTPRequestOperation, ConveyorError) -> Bool

    /// The logger every app uses.
    public static let shared = NetworkLogger()

    struct State {
        var level: Level = .info
        var sink: any LogSink = StandardErrorLogSink()
        var redaction = Redaction()
        var shouldLog: ShouldLog?
        var bodyLimit = 4096
        var expectedFailures: ExpectedFailure?
        /// Observer tokens: taken out under the lock and removed by the one caller that took them.
        var observers: [LockedReference<any NSObjectProtocol>] = []
        /// Start times by operation, for durations.
        var started: [ObjectIdentifier: (start: TimeInterval, attemptStart: TimeInterval)] = [:]
    }
    let state = Lock(State())
    private let queue = DispatchQueue(label: "org.conveyor.logger")
    private let clock: @Sendable () -> TimeInterval

    /// Creates a logger (most apps use ``shared``).
    /// - Parameters:
    ///   - sink: Where entries go; default standard error.
    ///   - clock: Seconds from a fixed origin, for durations; default the monotonic uptime. Tests inject a fixed clock.
    public init(sink: any LogSink = StandardErrorLogSink(), clock: (@Sendable () -> TimeInterval)? = nil) {
        self.clock = clock ?? { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
        state.withLock { $0.sink = sink }
    }

    /// How much is logged. Default `.info`.
    public var level: Level {
        get { state.withLock { $0.level } }
        set { state.withLock { $0.level = newValue } }
    }

    /// Where entries go. Default standard error.
    public var sink: any LogSink {
        get { state.withLock { $0.sink } }
        set { state.withLock { $0.sink = newValue } }
    }

    /// What is hidden. Default ``Redaction/init(headerNames:parameterNames:)``.
    public var redaction: Redaction {
        get { state.withLock { $0.redaction } }
        set { state.withLock { $0.redaction = newValue } }
    }

    /// Returns `true` for the operations to **log**; nil logs all. Presets: ``hosts(_:)``, ``pathPrefix(_:)``.
    public var shouldLog: ShouldLog? {
        get { state.withLock { $0.shouldLog } }
        set { state.withLock { $0.shouldLog = newValue } }
    }

    /// Body bytes printed at `.debug` before truncating. Default 4096. The body is masked
    /// first (``Redaction/masksSentValues``), so a secret across the limit is hidden whole.
    public var bodyLimit: Int {
        get { state.withLock { $0.bodyLimit } }
        set { state.withLock { $0.bodyLimit = newValue } }
    }

    /// Returns `true` for failures the app expects (a 404 it handles, say): they are logged at
    /// `.info`, so `.warn` shows only problems. nil (the default) treats every failure but a
    /// cancellation as a problem. Preset: ``statusCodes(_:)``.
    public var expectedFailures: ExpectedFailure? {
        get { state.withLock { $0.expectedFailures } }
        set { state.withLock { $0.expectedFailures = newValue } }
    }

    /// An ``expectedFailures`` filter for responses with one of `codes`.
    /// - Parameter codes: The status codes, for example `[404, 409]`.
    /// - Returns: The filter.
    public static func statusCodes(_ codes: IndexSet) -> ExpectedFailure {
        { _, error in error.statusCode.map(codes.contains) ?? false }
    }

    /// A ``shouldLog`` that logs operations whose URL host is one of `hosts`.
    /// - Parameter hosts: Host names (case-insensitive).
    /// - Returns: The filter.
    public static func hosts(_ hosts: Set<String>) -> ShouldLog {
        let hosts = Set(hosts.map { $0.lowercased() })
        return { operation in operation.request.url?.host.map { hosts.contains($0.lowercased()) } ?? false }
    }

    /// A ``shouldLog`` that logs operations whose URL path starts with `prefix`.
    /// - Parameter prefix: The path prefix, for example `/api/`.
    /// - Returns: The filter.
    public static func pathPrefix(_ prefix: String) -> ShouldLog {
        { operation in operation.request.url?.path.hasPrefix(prefix) ?? false }
    }

    /// Starts observing operations. Calling it again does nothing.
    public func startLogging() {
        let needed = state.withLock { $0.observers.isEmpty }
        guard needed else { return }
        let center = NotificationCenter.default
        let observers = [
            center.addObserver(forName: .conveyorOperationDidStart, object: nil, queue: nil) { [weak self] in
                guard let operation = $0.object as? HTTPRequestOperation else { return }
                self?.operationDidStart(operation, observed: true)
            },
            center.addObserver(forName: .conveyorOperationWillSend, object: nil, queue: nil) { [weak self] in
                guard let operation = $0.object as? HTTPRequestOperation else { return }
                self?.operationWillSend(
                    operation, request: $0.userInfo?["request"] as? URLRequest ?? operation.currentRequest, attempt: 1, observed: true)
            },
            center.addObserver(forName: .conveyorOperationDidFinish, object: nil, queue: nil) { [weak self] in
                guard let operation = $0.object as? HTTPRequestOperation else { return }
                self?.operationDidFinish(
                    operation, request: operation.currentRequest, response: operation.responseHead, error: operation.error,
                    metrics: operation.metrics, observed: true)
            },
            center.addObserver(forName: .conveyorOperationWillRetry, object: nil, queue: nil) { [weak self] in
                guard let operation = $0.object as? HTTPRequestOperation else { return }
                self?.operationWillRetry(
                    operation, request: operation.currentRequest, response: operation.responseHead,
                    attempt: $0.userInfo?["attempt"] as? Int ?? 0, error: $0.userInfo?["error"] as? ConveyorError, observed: true)
            },
        ].map { LockedReference($0) }
        let duplicate = state.withLock { state -> Bool in
            guard state.observers.isEmpty else { return true }
            state.observers = observers
            return false
        }
        if duplicate { observers.forEach { center.removeObserver($0.value) } }
    }

    /// Stops observing. Calling it again does nothing.
    public func stopLogging() {
        let observers = state.withLock { state in
            defer {
                state.observers = []
                state.started = [:]
            }
            return state.observers
        }
        observers.forEach { NotificationCenter.default.removeObserver($0.value) }
    }

    /// Waits until every entry logged so far has been handed to the sink.
    public func flush() { queue.sync {} }

    // MARK: - Events

    // `observed`: reported by the notifications (``startLogging()``), else as an ``EventMonitor``
    // of a client; one logger logs by one route at a time, so nothing is logged twice.

    /// Records when the operation started (its durations count from here); its `→` line waits
    /// for the request as sent.
    func operationDidStart(_ operation: HTTPRequestOperation, observed: Bool) {
        _ = settings(for: operation, recordingStart: clock(), observed: observed)
    }

    /// Logs the `→` line of the first attempt: `request` as it goes out, after the authenticator
    /// and the adapters — the headers and the cURL command they add are shown (they were not,
    /// when the line was written at the start). A request that fails before anything is sent
    /// (its route refused, an adapter failed) has its `←` line alone.
    func operationWillSend(_ operation: HTTPRequestOperation, request: URLRequest, attempt: Int, observed: Bool) {
        guard attempt == 1, let settings = settings(for: operation, recordingStart: nil, observed: observed) else { return }
        guard settings.level <= .info else { return }
        var entry = "→ \(describe(request, settings))"
        if settings.level == .debug { entry += details(of: request, settings) }
        emit(entry, level: .info, settings)
    }

    func operationWillRetry(
        _ operation: HTTPRequestOperation, request: URLRequest, response: HTTPResponseHead?, attempt: Int, error: ConveyorError?,
        observed: Bool
    ) {
        let now = clock()
        let attemptTime = state.withLock { state -> TimeInterval? in
            guard let times = state.started[ObjectIdentifier(operation)] else { return nil }
            state.started[ObjectIdentifier(operation)] = (times.start, now)
            return now - times.attemptStart
        }
        guard let attemptTime, let settings = settings(for: operation, recordingStart: nil, observed: observed), settings.level <= .info
        else { return }
        let status = response.map { "\($0.statusCode) " } ?? ""
        var entry =
            "↻ \(status)\(describe(request, settings)) [attempt \(attempt - 1), \(Self.seconds(attemptTime))] retrying"
        if let error { entry += ": \(redacted(error, settings))" }
        if settings.level == .debug { entry += "\n  next attempt: \(attempt)" }
        emit(entry, level: .info, settings)
    }

    func operationDidFinish(
        _ operation: HTTPRequestOperation, request: URLRequest, response: HTTPResponseHead?, error: ConveyorError?,
        metrics: OperationMetrics?, observed: Bool
    ) {
        let now = clock()
        let start = state.withLock { $0.started.removeValue(forKey: ObjectIdentifier(operation))?.start }
        guard let settings = settings(for: operation, recordingStart: nil, observed: observed) else { return }
        let severity: Level = error.map { self.severity(of: $0, operation: operation, settings) } ?? .info
        guard settings.level <= severity else { return }
        let status = response.map { String($0.statusCode) } ?? "ERR"
        var facts = [Self.seconds(start.map { now - $0 } ?? 0)]
        if let metrics, response != nil { facts.append(Self.size(Int64(metrics.bytesReceived))) }
        if let attempts = metrics?.attemptCount, attempts > 1 { facts.append("\(attempts) attempts") }
        var entry = "← \(status) \(describe(request, settings)) [\(facts.joined(separator: ", "))]"
        if let error { entry += " \(redacted(error, settings))" }
        if settings.level == .debug, let response {
            entry += details(of: response, operation: operation, settings)
        }
        // Which way the request went: through the client's proxy, or past it (a local server is
        // bypassed by default, which was silent before).
        if settings.level == .debug, let route = metrics?.transfer?.proxy, route != .environment {
            entry += "\n  proxy: \(route)"
        }
        emit(entry, level: severity, settings)
    }

    private func severity(of error: ConveyorError, operation: HTTPRequestOperation, _ settings: State) -> Level {
        if error.isCancelled || settings.expectedFailures?(operation, error) == true { return .info }
        switch error {
        case .network, .responseSerializationFailed: return .error
        default: return .warn
        }
    }

    /// The settings to log `operation` with, or nil when it is filtered out, logging is off, or
    /// the event came by the route the logger is not using (`observed`: the notifications).
    private func settings(for operation: HTTPRequestOperation, recordingStart start: TimeInterval?, observed: Bool) -> State? {
        let settings = state.withLock { state -> State? in
            guard state.observers.isEmpty != observed, state.level != .off else { return nil }
            if let start { state.started[ObjectIdentifier(operation)] = (start, start) }
            var copy = state
            copy.observers = []
            copy.started = [:]
            return copy
        }
        guard let settings else { return nil }
        if let shouldLog = settings.shouldLog, !shouldLog(operation) { return nil }
        return settings
    }

    private func emit(_ entry: String, level: Level, _ settings: State) {
        let sink = settings.sink
        let entry = settings.redaction.masked(entry)
        queue.async { sink.write(entry, level: level) }
    }
}

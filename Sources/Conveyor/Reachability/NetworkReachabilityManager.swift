import ConveyorLocking
import Foundation

extension Notification.Name {
    /// Posted on a reachability manager's queue when its status changes; `object` is the
    /// manager, `userInfo["status"]` the new ``NetworkReachabilityManager/Status``.
    public static let conveyorReachabilityDidChange = Notification.Name("org.conveyor.reachability.didChange")
}

/// Tells whether a host (or the outside world) can be reached, and when that changes.
///
/// On Linux it listens to the kernel's routing events on a netlink socket (one shared socket
/// for all managers; polling every ``pollingInterval`` where netlink is unavailable) and
/// decides from the interfaces and the route toward the host; on Apple platforms it uses
/// `NWPathMonitor`, whose path is the device's, not the host's (loopback targets are reachable
/// on both; the Reachability article lists the differences). The first status is delivered
/// right after ``startMonitoring(queue:onChange:)``.
public final class NetworkReachabilityManager: Sendable {
    // Sendable, checked by the compiler: all mutable state is in `state`, behind one Mutex.

    /// Reachability of the target.
    public enum Status: Sendable, Equatable, CustomStringConvertible {
        /// Not determined yet.
        case unknown
        /// No route to the target.
        case notReachable
        /// Reachable, over this kind of link.
        case reachable(ConnectionType)

        /// `unknown`, `not reachable`, `reachable (ethernet or Wi-Fi)`, `reachable (cellular)`,
        /// `reachable (loopback)`.
        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .notReachable: "not reachable"
            case .reachable(.ethernetOrWiFi): "reachable (ethernet or Wi-Fi)"
            case .reachable(.cellular): "reachable (cellular)"
            case .reachable(.loopback): "reachable (loopback)"
            }
        }
    }

    /// The kind of link a reachable target is reached over.
    public enum ConnectionType: Sendable, Equatable {
        /// Wired, Wi-Fi or any other link that is neither cellular nor loopback.
        case ethernetOrWiFi
        /// A mobile data link (WWAN).
        case cellular
        /// This machine itself (`127.0.0.1`, `::1`, `localhost`): reachable with no network at all.
        case loopback
    }

    /// What is being watched.
    public enum Target: Sendable, Equatable {
        /// Any route to the outside world.
        case internet
        /// A host name, resolved when the status is evaluated.
        case host(String)
        /// A numeric IPv4 or IPv6 address.
        case address(String)
    }

    /// Watches "any route to the outside".
    public static let shared = NetworkReachabilityManager(target: .internet)

    /// The watched target.
    public let target: Target
    /// Seconds between re-evaluations when no event source works (netlink refused in a
    /// sandbox). Default 5: frequent enough for a user-facing banner, cheap enough to ignore.
    public let pollingInterval: TimeInterval
    let probe: any ReachabilityProbe
    let events: any ReachabilityEventSource

    private struct State {
        var status: Status = .unknown
        var monitoring = false
        var queue: DispatchQueue = .conveyorDefaultCallbackQueue
        /// In the order added: a client's own handler (suspending its queue) runs before yours.
        var handlers: [(token: UUID, handler: @Sendable (Status) -> Void)] = []
        var onChange: (@Sendable (Status) -> Void)?
        var subscription: UUID?
    }
    private let state = Lock(State())
    /// Evaluations run here, serially, off the caller's thread (host names are resolved).
    private let evaluationQueue = DispatchQueue(label: "org.conveyor.reachability")

    /// Watches a host name.
    /// - Parameter host: The host, for example `api.example.com`.
    public convenience init(host: String) { self.init(target: .host(host)) }

    /// Watches a numeric address.
    /// - Parameter address: An IPv4 or IPv6 address, for example `127.0.0.1`.
    public convenience init(address: String) { self.init(target: .address(address)) }

    /// Creates a manager with the platform's probe and event source, or injected ones (tests).
    /// - Parameters:
    ///   - target: What to watch.
    ///   - probe: Decides the status; default the platform's.
    ///   - events: Says when to decide again; default the platform's.
    ///   - pollingInterval: Used when `events` cannot start; default 5 s.
    public init(
        target: Target, probe: (any ReachabilityProbe)? = nil, events: (any ReachabilityEventSource)? = nil,
        pollingInterval: TimeInterval = 5
    ) {
        self.target = target
        self.probe = probe ?? PlatformReachability.defaultProbe
        self.events = events ?? PlatformReachability.defaultEvents(pollingInterval: pollingInterval)
        self.pollingInterval = pollingInterval
    }

    deinit { stopMonitoring() }

    /// The last status determined; `.unknown` before monitoring started.
    public var status: Status { state.withLock { $0.status } }

    /// Whether ``status`` is `.reachable`.
    public var isReachable: Bool { if case .reachable = status { true } else { false } }

    /// Starts watching. The first status follows promptly, then one per change.
    /// - Parameters:
    ///   - queue: Where `onChange` and the notification run; default Conveyor's callback queue.
    ///   - onChange: Called with each new status; nil for none.
    public func startMonitoring(queue: DispatchQueue = .conveyorDefaultCallbackQueue, onChange: (@Sendable (Status) -> Void)? = nil) {
        let start = state.withLock { state -> Bool in
            state.queue = queue
            state.onChange = onChange
            guard !state.monitoring else { return false }
            state.monitoring = true
            return true
        }
        guard start else {
            evaluate()
            return
        }
        let token = events.subscribe { [weak self] in self?.evaluateSettling() }
        state.withLock { $0.subscription = token }
        evaluate()
    }

    /// Stops watching; the status keeps its last value. Calling it again does nothing.
    public func stopMonitoring() {
        let token = state.withLock { state -> UUID? in
            state.monitoring = false
            defer { state.subscription = nil }
            return state.subscription
        }
        if let token { events.unsubscribe(token) }
    }

    /// Adds a handler called (on the monitoring queue) with each new status; handlers run in
    /// the order they were added.
    /// - Parameter handler: The handler.
    /// - Returns: A token for ``removeHandler(_:)``.
    @discardableResult
    public func addHandler(_ handler: @escaping @Sendable (Status) -> Void) -> UUID {
        let token = UUID()
        state.withLock { $0.handlers.append((token, handler)) }
        return token
    }

    /// Removes a handler added with ``addHandler(_:)``.
    /// - Parameter token: The handler's token.
    public func removeHandler(_ token: UUID) { state.withLock { $0.handlers.removeAll { $0.token == token } } }

    /// Evaluates now and twice more shortly after: one change (a link coming up) arrives as
    /// several kernel events while addresses and routes settle, and a decision taken between
    /// two of them must not be the last word.
    private func evaluateSettling() {
        evaluate()
        for delay in [0.1, 0.5] {
            evaluationQueue.asyncAfter(deadline: Seconds.dispatchTime(after: delay)) { [weak self] in self?.evaluate() }
        }
    }

    /// Decides the status again now (normally events do this).
    public func evaluate() {
        evaluationQueue.async { [self] in
            let status = probe.status(for: target)
            let change = state.withLock { state -> (DispatchQueue, [@Sendable (Status) -> Void])? in
                guard state.monitoring, state.status != status else { return nil }
                state.status = status
                return (state.queue, state.handlers.map(\.handler) + [state.onChange].compactMap { $0 })
            }
            guard let (queue, handlers) = change else { return }
            queue.async {
                handlers.forEach { $0(status) }
                NotificationCenter.default.post(name: .conveyorReachabilityDidChange, object: self, userInfo: ["status": status])
            }
        }
    }
}

/// Decides a target's reachability from the system's current state.
public protocol ReachabilityProbe: Sendable {
    /// The status of `target` now. Called off the caller's thread; may resolve host names.
    /// - Parameter target: What to evaluate.
    /// - Returns: The status.
    func status(for target: NetworkReachabilityManager.Target) -> NetworkReachabilityManager.Status
}

/// Tells reachability managers when the network may have changed.
public protocol ReachabilityEventSource: Sendable {
    /// Calls `handler` (on any thread) after each possible change, until unsubscribed.
    /// - Parameter handler: The callback.
    /// - Returns: A token for ``unsubscribe(_:)``.
    func subscribe(_ handler: @escaping @Sendable () -> Void) -> UUID
    /// Stops calling a handler.
    /// - Parameter token: The token ``subscribe(_:)`` returned.
    func unsubscribe(_ token: UUID)
}

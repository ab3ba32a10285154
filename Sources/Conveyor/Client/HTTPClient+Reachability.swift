import ConveyorLocking
import Foundation

extension HTTPClient {
    /// The reachability of the client's base URL host; `.unknown` when monitoring is off
    /// (``Configuration/monitorsReachability``) or has not decided yet.
    public var reachabilityStatus: NetworkReachabilityManager.Status {
        reachability?.status ?? .unknown
    }

    /// Sets the block called (on the callback queue) when the base URL host's reachability
    /// changes; the current status is delivered first.
    /// - Parameter handler: The block; nil removes it.
    public func setReachabilityStatusChangeHandler(_ handler: (@Sendable (NetworkReachabilityManager.Status) -> Void)?) {
        guard let reachability else { return }
        let old = mutableState.withLock { state -> UUID? in
            defer { state.reachabilityHandler = nil }
            return state.reachabilityHandler
        }
        if let old { reachability.removeHandler(old) }
        guard let handler else { return }
        // The current status is delivered first, and a change may race with that delivery:
        // the wrapper passes each status on once, never the same one twice in a row.
        let last = LastStatus()
        let deduplicated: @Sendable (NetworkReachabilityManager.Status) -> Void = { status in
            if last.replace(with: status) { handler(status) }
        }
        let token = reachability.addHandler(deduplicated)
        mutableState.withLock { $0.reachabilityHandler = token }
        let current = reachability.status
        if current != .unknown { configuration.callbackQueue.async { deduplicated(current) } }
    }

    /// Starts the base URL host's monitor, suspending the queue while it is unreachable when
    /// configured so (queued operations are kept, not failed).
    static func startReachability(for baseURL: URL, configuration: Configuration, queue: OperationQueue) -> NetworkReachabilityManager? {
        // A Unix domain socket is local: no network decides whether it answers.
        guard configuration.monitorsReachability, configuration.unixSocketPath == nil, !UnixSocketURL.isUnixSocket(baseURL),
            var host = baseURL.host
        else { return nil }
        // With an address override for the base URL, that address is what requests reach.
        if let override = configuration.resolve.first(where: { $0.problem == nil && $0.applies(to: baseURL) }),
            let address = override.addresses.first.flatMap(AddressOverride.numericAddress)
        {
            host = address
        }
        let manager = NetworkReachabilityManager(
            target: .host(host), probe: configuration.reachabilityProbe, events: configuration.reachabilityEvents
        )
        if configuration.suspendsQueueWhenUnreachable {
            // The client's queue synchronizes itself; wrapped so that the capture does not rest
            // on the SDK marking `OperationQueue` `Sendable`.
            let suspended = LockedReference(queue)
            manager.addHandler { status in suspended.value.isSuspended = status == .notReachable }
        }
        manager.startMonitoring(queue: configuration.callbackQueue)
        return manager
    }
}

/// The last status a handler was given.
private final class LastStatus: Sendable {
    private let status = Lock<NetworkReachabilityManager.Status?>(nil)

    /// Records `new`; returns whether it differs from the previous one.
    func replace(with new: NetworkReachabilityManager.Status) -> Bool {
        status.withLock { status in
            defer { status = new }
            return status != new
        }
    }
}

import ConveyorLocking
import Foundation

#if canImport(Network)
    import Network
#endif

/// The probe and event source each platform uses by default.
enum PlatformReachability {
    static var defaultProbe: any ReachabilityProbe {
        #if os(Linux)
            LinuxReachabilityProbe()
        #elseif canImport(Network)
            PathMonitorReachability.shared
        #else
            UnknownReachability()
        #endif
    }

    static func defaultEvents(pollingInterval: TimeInterval) -> any ReachabilityEventSource {
        #if os(Linux)
            NetlinkEvents.shared
        #elseif canImport(Network)
            PathMonitorReachability.shared
        #else
            UnknownReachability()
        #endif
    }
}

/// Platforms without a monitor: the status stays unknown.
struct UnknownReachability: ReachabilityProbe, ReachabilityEventSource {
    func status(for target: NetworkReachabilityManager.Target) -> NetworkReachabilityManager.Status { .unknown }
    func subscribe(_ handler: @escaping @Sendable () -> Void) -> UUID { UUID() }
    func unsubscribe(_ token: UUID) {}
}

#if canImport(Network)
    /// `NWPathMonitor` as both probe and event source (Apple platforms). The path is the device's
    /// overall one: a host-specific answer would need a connection attempt.
    final class PathMonitorReachability: ReachabilityProbe, ReachabilityEventSource, @unchecked Sendable {
        // @unchecked Sendable: the latest path and the subscribers are behind one Mutex; the
        // monitor is thread-safe.
        static let shared = PathMonitorReachability()

        private let monitor = NWPathMonitor()
        private let state = Lock<(status: NetworkReachabilityManager.Status, subscribers: [UUID: @Sendable () -> Void])>((.unknown, [:]))

        private init() {
            monitor.pathUpdateHandler = { [weak self] path in
                guard let self else { return }
                let status: NetworkReachabilityManager.Status =
                    path.status == .satisfied
                    ? .reachable(
                        path.usesInterfaceType(.cellular) ? .cellular : path.usesInterfaceType(.loopback) ? .loopback : .ethernetOrWiFi)
                    : .notReachable
                let handlers = self.state.withLock { state -> [@Sendable () -> Void] in
                    state.status = status
                    return Array(state.subscribers.values)
                }
                handlers.forEach { $0() }
            }
            monitor.start(queue: DispatchQueue(label: "org.conveyor.path-monitor"))
        }

        func status(for target: NetworkReachabilityManager.Target) -> NetworkReachabilityManager.Status {
            state.withLock { $0.status }
        }

        func subscribe(_ handler: @escaping @Sendable () -> Void) -> UUID {
            let token = UUID()
            state.withLock { $0.subscribers[token] = handler }
            return token
        }

        func unsubscribe(_ token: UUID) { state.withLock { _ = $0.subscribers.removeValue(forKey: token) } }
    }
#endif

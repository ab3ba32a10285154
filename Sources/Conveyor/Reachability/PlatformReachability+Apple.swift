#if canImport(Network)
    import ConveyorLocking
    import Foundation
    import Network

    /// `NWPathMonitor` as both probe and event source (Apple platforms). The path is the
    /// device's overall one; ``PathReachability`` decides what it means for a target.
    final class PathMonitorReachability: ReachabilityProbe, ReachabilityEventSource, Sendable {
        // Sendable, checked by the compiler: the latest path and the subscribers are behind one
        // Mutex; NWPathMonitor is Sendable.
        static let shared = PathMonitorReachability()

        private struct State {
            /// nil until the monitor's first update, which it delivers right after it starts.
            var path: PathReachability.Path?
            var subscribers: [UUID: @Sendable () -> Void] = [:]
        }
        private let monitor = NWPathMonitor()
        private let state = Lock(State())

        private init() {
            monitor.pathUpdateHandler = { [weak self] path in
                guard let self else { return }
                let latest = PathReachability.Path(
                    isSatisfied: path.status == .satisfied, usesCellular: path.usesInterfaceType(.cellular),
                    usesLoopback: path.usesInterfaceType(.loopback))
                let handlers = self.state.withLock { state -> [@Sendable () -> Void] in
                    state.path = latest
                    return Array(state.subscribers.values)
                }
                handlers.forEach { $0() }
            }
            monitor.start(queue: DispatchQueue(label: "org.conveyor.path-monitor"))
        }

        func status(for target: NetworkReachabilityManager.Target) -> NetworkReachabilityManager.Status {
            PathReachability.status(for: target, path: state.withLock { $0.path })
        }

        func subscribe(_ handler: @escaping @Sendable () -> Void) -> UUID {
            let token = UUID()
            state.withLock { $0.subscribers[token] = handler }
            return token
        }

        func unsubscribe(_ token: UUID) { state.withLock { _ = $0.subscribers.removeValue(forKey: token) } }
    }
#endif

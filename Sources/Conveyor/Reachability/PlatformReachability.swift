import Foundation

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

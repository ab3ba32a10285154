#if os(Linux)
    import Foundation
    import Glibc
    import ConveyorLocking

    /// Glibc declares neither `sockaddr_nl` nor the `RTMGRP_*` groups (both live in
    /// `<linux/netlink.h>` / `<linux/rtnetlink.h>`); these mirror the kernel's definitions.
    struct NetlinkAddress {
        var family: sa_family_t = sa_family_t(AF_NETLINK)
        var pad: UInt16 = 0
        var pid: UInt32 = 0
        var groups: UInt32 = 0
    }

    enum RoutingGroups {
        static let link: UInt32 = 0x1
        static let ipv4Address: UInt32 = 0x10
        static let ipv4Route: UInt32 = 0x40
        static let ipv6Address: UInt32 = 0x100
        static let ipv6Route: UInt32 = 0x400
    }

    /// One netlink route socket for the whole process, read on one thread; every message
    /// (link up/down, address or route added/removed) wakes all subscribed managers. Where the
    /// socket cannot be opened (a sandbox without netlink) a timer polls instead.
    final class NetlinkEvents: ReachabilityEventSource, Sendable {
        // Sendable, checked by the compiler: every mutable property is in `state`, behind one
        // Mutex.
        static let shared = NetlinkEvents(pollingInterval: 5)

        private struct State {
            var subscribers: [UUID: @Sendable () -> Void] = [:]
            var started = false
            var usesNetlink = false
            /// A dispatch source: thread-safe to cancel from whichever thread stops the events.
            var pollTimer: LockedReference<any DispatchSourceTimer>?
        }
        private let state = Lock(State())
        let pollingInterval: TimeInterval

        init(pollingInterval: TimeInterval) { self.pollingInterval = pollingInterval }

        /// Whether events come from netlink (false: polling, or not started yet).
        var usesNetlink: Bool { state.withLock { $0.usesNetlink } }

        func subscribe(_ handler: @escaping @Sendable () -> Void) -> UUID {
            let token = UUID()
            let startNow = state.withLock { state -> Bool in
                state.subscribers[token] = handler
                defer { state.started = true }
                return !state.started
            }
            if startNow { start() }
            return token
        }

        func unsubscribe(_ token: UUID) { state.withLock { _ = $0.subscribers.removeValue(forKey: token) } }

        private func notify() {
            let handlers = state.withLock { Array($0.subscribers.values) }
            handlers.forEach { $0() }
        }

        private func start() {
            let netlinkRoute: Int32 = 0  // NETLINK_ROUTE, which Glibc does not export
            let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), netlinkRoute)
            var address = NetlinkAddress()
            address.groups =
                RoutingGroups.link | RoutingGroups.ipv4Address | RoutingGroups.ipv6Address | RoutingGroups.ipv4Route
                | RoutingGroups.ipv6Route
            let bound =
                fd >= 0
                && withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<NetlinkAddress>.size)) }
                } == 0
            guard bound else {
                if fd >= 0 { close(fd) }
                startPolling()
                return
            }
            state.withLock { $0.usesNetlink = true }
            let thread = Thread { [self] in
                var buffer = [UInt8](repeating: 0, count: 16 * 1024)
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if count < 0 && errno == EINTR { continue }
                    // ENOBUFS (events dropped under load) still means "something changed".
                    if count < 0 && errno != ENOBUFS { break }
                    notify()
                }
                close(fd)
                self.state.withLock { $0.usesNetlink = false }
                startPolling()
            }
            thread.name = "org.conveyor.netlink"
            thread.start()
        }

        private func startPolling() {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "org.conveyor.reachability-poll"))
            timer.setEventHandler { [weak self] in self?.notify() }
            timer.schedule(deadline: Seconds.dispatchTime(after: pollingInterval), repeating: Seconds.dispatchInterval(pollingInterval))
            timer.resume()
            state.withLock { $0.pollTimer = LockedReference(timer) }
        }
    }

    /// Decides reachability from the kernel's routing table: a target is reachable when a UDP
    /// socket can be connected to it (route lookup only: UDP `connect` sends no packet) and the
    /// interface owning the chosen source address is up and running.
    struct LinuxReachabilityProbe: ReachabilityProbe {
        /// TEST-NET-1 (RFC 5737): never answered, but routed like any outside address, so it
        /// stands for "the internet" without a packet being sent.
        static let outsideIPv4 = "192.0.2.1"

        func status(for target: NetworkReachabilityManager.Target) -> NetworkReachabilityManager.Status {
            let candidates: [(family: Int32, address: sockaddr_storage, length: socklen_t)]
            switch target {
            case .internet: candidates = Self.numeric(Self.outsideIPv4).map { [$0] } ?? []
            case .address(let text): candidates = Self.numeric(text).map { [$0] } ?? []
            case .host(let name): candidates = Self.numeric(name).map { [$0] } ?? Self.resolve(name)
            }
            for candidate in candidates {
                if let type = Self.route(to: candidate) { return .reachable(type) }
            }
            return .notReachable
        }

        static func numeric(_ text: String) -> (family: Int32, address: sockaddr_storage, length: socklen_t)? {
            var storage = sockaddr_storage()
            let trimmed = text.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            let isV4 = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer -> Bool in
                    pointer.pointee.sin_family = sa_family_t(AF_INET)
                    pointer.pointee.sin_port = UInt16(9).bigEndian
                    return inet_pton(AF_INET, trimmed, &pointer.pointee.sin_addr) == 1
                }
            }
            if isV4 { return (AF_INET, storage, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            storage = sockaddr_storage()
            let isV6 = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer -> Bool in
                    pointer.pointee.sin6_family = sa_family_t(AF_INET6)
                    pointer.pointee.sin6_port = UInt16(9).bigEndian
                    return inet_pton(AF_INET6, trimmed, &pointer.pointee.sin6_addr) == 1
                }
            }
            return isV6 ? (AF_INET6, storage, socklen_t(MemoryLayout<sockaddr_in6>.size)) : nil
        }

        static func resolve(_ host: String) -> [(family: Int32, address: sockaddr_storage, length: socklen_t)] {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, "9", &hints, &result) == 0, let first = result else { return [] }
            defer { freeaddrinfo(first) }
            var found: [(Int32, sockaddr_storage, socklen_t)] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let info = cursor {
                if let address = info.pointee.ai_addr {
                    var storage = sockaddr_storage()
                    withUnsafeMutableBytes(of: &storage) {
                        $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(info.pointee.ai_addrlen)))
                    }
                    found.append((info.pointee.ai_family, storage, info.pointee.ai_addrlen))
                }
                cursor = info.pointee.ai_next
            }
            return found
        }

        /// The link type toward `candidate`, or nil when there is no route or its interface is down.
        static func route(to candidate: (family: Int32, address: sockaddr_storage, length: socklen_t)) -> NetworkReachabilityManager
            .ConnectionType?
        {
            let fd = socket(candidate.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var address = candidate.address
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, candidate.length) }
            }
            guard connected == 0 else { return nil }
            var source = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else { return nil }
            return interface(owning: source, family: candidate.family)
        }

        /// The type of the up-and-running interface holding `source`, from getifaddrs.
        static func interface(owning source: sockaddr_storage, family: Int32) -> NetworkReachabilityManager.ConnectionType? {
            var list: UnsafeMutablePointer<ifaddrs>?
            guard getifaddrs(&list) == 0, let first = list else { return nil }
            defer { freeifaddrs(first) }
            let up: UInt32 = 0x1
            let loopback: UInt32 = 0x8
            let running: UInt32 = 0x40  // IFF_UP, IFF_LOOPBACK, IFF_RUNNING
            var cursor: UnsafeMutablePointer<ifaddrs>? = first
            while let entry = cursor {
                defer { cursor = entry.pointee.ifa_next }
                guard let address = entry.pointee.ifa_addr, Int32(address.pointee.sa_family) == family,
                    entry.pointee.ifa_flags & (up | running) == (up | running), sameHost(address, source, family: family)
                else { continue }
                if entry.pointee.ifa_flags & loopback != 0 { return .loopback }
                let name = String(cString: entry.pointee.ifa_name)
                let cellular = ["wwan", "rmnet", "ccmni", "ppp"].contains { name.hasPrefix($0) }
                return cellular ? .cellular : .ethernetOrWiFi
            }
            return nil
        }

        private static func sameHost(_ address: UnsafeMutablePointer<sockaddr>, _ source: sockaddr_storage, family: Int32) -> Bool {
            var source = source
            return withUnsafeBytes(of: &source) { sourceBytes in
                if family == AF_INET {
                    let offset = MemoryLayout<sockaddr_in>.offset(of: \sockaddr_in.sin_addr)!
                    return memcmp(UnsafeRawPointer(address) + offset, sourceBytes.baseAddress! + offset, 4) == 0
                }
                let offset = MemoryLayout<sockaddr_in6>.offset(of: \sockaddr_in6.sin6_addr)!
                return memcmp(UnsafeRawPointer(address) + offset, sourceBytes.baseAddress! + offset, 16) == 0
            }
        }
    }
#endif

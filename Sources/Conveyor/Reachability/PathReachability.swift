import Foundation

/// How a device-wide path (Apple's `NWPathMonitor`) answers for a target, in code every
/// platform compiles and Linux tests; `PlatformReachability+Apple.swift` only turns an `NWPath`
/// into a ``Path``.
///
/// Linux decides per target with a route lookup. A path monitor knows only the device's
/// overall path, so the two agree where that is cheap: a loopback target (`localhost`, a
/// `.localhost` name, `127.0.0.0/8`, `::1`) is `.reachable(.loopback)` whatever the path, as
/// the Linux route lookup finds it on the always-up loopback interface; any other target gets
/// the device's status. See the Reachability article for what still differs.
enum PathReachability {
    /// What a path update says, without the SDK's types.
    struct Path: Sendable, Equatable {
        /// Whether the path can be used (`NWPath.Status.satisfied`).
        var isSatisfied: Bool
        /// Whether it goes over a cellular link.
        var usesCellular: Bool
        /// Whether it goes over the loopback interface only.
        var usesLoopback: Bool
    }

    /// The status of `target` given the latest path (nil: none delivered yet).
    static func status(for target: NetworkReachabilityManager.Target, path: Path?) -> NetworkReachabilityManager.Status {
        if isLoopback(target) { return .reachable(.loopback) }
        guard let path else { return .unknown }
        guard path.isSatisfied else { return .notReachable }
        return .reachable(path.usesCellular ? .cellular : path.usesLoopback ? .loopback : .ethernetOrWiFi)
    }

    /// Whether `target` names this machine: `localhost` and names under `.localhost` (RFC 6761
    /// §6.3), `127.0.0.0/8` and `::1` (also bracketed, or as `::ffff:127.x.y.z`).
    static func isLoopback(_ target: NetworkReachabilityManager.Target) -> Bool {
        switch target {
        case .internet:
            return false
        case .host(let name):
            let host = name.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
            return host == "localhost" || host.hasSuffix(".localhost") || isLoopbackAddress(host)
        case .address(let text):
            return isLoopbackAddress(text)
        }
    }

    private static func isLoopbackAddress(_ text: String) -> Bool {
        let address = text.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if address == "::1" || address == "0:0:0:0:0:0:0:1" { return true }
        let v4 = address.hasPrefix("::ffff:") ? String(address.dropFirst(7)) : address
        let parts = v4.split(separator: ".", omittingEmptySubsequences: false)
        let octets = parts.compactMap { part in part.allSatisfy { ("0"..."9").contains($0) } ? UInt8(part) : nil }
        return parts.count == 4 && octets.count == 4 && octets[0] == 127
    }
}

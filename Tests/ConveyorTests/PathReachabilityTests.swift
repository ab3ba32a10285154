import Foundation
import Testing

@testable import Conveyor

/// Apple's path-monitor reachability, decided in platform-neutral code: loopback targets are
/// reachable whatever the device's path, as on Linux; other targets get the device's status.
@Suite("Reachability on Apple platforms: what a device-wide path means for a target")
struct PathReachabilityTests {
    typealias Path = PathReachability.Path

    static let offline = Path(isSatisfied: false, usesCellular: false, usesLoopback: false)
    static let wifi = Path(isSatisfied: true, usesCellular: false, usesLoopback: false)
    static let cellular = Path(isSatisfied: true, usesCellular: true, usesLoopback: false)

    @Test(
        "Loopback targets are reachable over loopback, offline and before the first path update",
        arguments: [
            NetworkReachabilityManager.Target.host("localhost"), .host("LOCALHOST."), .host("api.localhost"), .host("127.0.0.1"),
            .address("127.0.0.1"), .address("127.255.0.9"), .address("::1"), .address("[::1]"), .address("::ffff:127.0.0.1"),
        ])
    func loopbackTargets(target: NetworkReachabilityManager.Target) {
        #expect(PathReachability.isLoopback(target))
        for path in [nil, Self.offline, Self.wifi, Self.cellular] {
            #expect(PathReachability.status(for: target, path: path) == .reachable(.loopback))
        }
    }

    @Test(
        "Other targets get the device's path: unknown before its first update, then its status and link",
        arguments: [
            NetworkReachabilityManager.Target.internet, .host("example.com"), .host("localhost.example.com"), .host("notlocalhost"),
            .address("192.0.2.1"), .address("128.0.0.1"), .address("::2"), .address("1127.0.0.1"), .address("127.0.0"),
        ])
    func otherTargets(target: NetworkReachabilityManager.Target) {
        #expect(!PathReachability.isLoopback(target))
        #expect(PathReachability.status(for: target, path: nil) == .unknown)
        #expect(PathReachability.status(for: target, path: Self.offline) == .notReachable)
        #expect(PathReachability.status(for: target, path: Self.wifi) == .reachable(.ethernetOrWiFi))
        #expect(PathReachability.status(for: target, path: Self.cellular) == .reachable(.cellular))
    }

    #if os(Linux)
        @Test("Linux's route lookup agrees on loopback targets")
        func linuxAgrees() {
            for target in [NetworkReachabilityManager.Target.host("localhost"), .address("127.0.0.1"), .address("127.8.9.10")] {
                #expect(LinuxReachabilityProbe().status(for: target) == PathReachability.status(for: target, path: Self.offline))
            }
        }
    #endif
}

// ConveyorTestHelper: runs a scenario in its own process for the tests.
//
//   ConveyorTestHelper reachability   (run inside `unshare -n`: loopback starts down)
//     prints "status <description> <seconds since the link was brought up>" per change,
//     brings `lo` up with `ip link set lo up` after the first status, exits 0 once reachable
//     (1 after 5 s without).
import Conveyor
import Foundation

/// Writes a line unbuffered, so the parent sees it even if this process is killed.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments.dropFirst()

func reachability() -> Int32 {
    let manager = NetworkReachabilityManager(address: "127.0.0.1")
    let statuses = AsyncStream.makeStream(of: NetworkReachabilityManager.Status.self)
    manager.startMonitoring(queue: DispatchQueue(label: "helper")) { statuses.continuation.yield($0) }
    let done = DispatchSemaphore(value: 0)
    let outcome = UncheckedResult()
    Task {
        var linkUp: ContinuousClock.Instant?
        for await status in statuses.stream {
            let since = linkUp.map { ContinuousClock.now - $0 }.map { String(format: "%.3f", Double($0.components.attoseconds) / 1e18 + Double($0.components.seconds)) } ?? "-"
            say("status \(status) \(since)")
            if linkUp == nil {
                linkUp = ContinuousClock.now
                let ip = Process()
                ip.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
                ip.arguments = ["link", "set", "lo", "up"]
                do { try ip.run() } catch { say("error \(error)") }
                ip.waitUntilExit()
            } else if case .reachable = status {
                outcome.code = 0
                done.signal()
                return
            }
        }
    }
    _ = done.wait(timeout: .now() + 5)
    return outcome.code
}

final class UncheckedResult: @unchecked Sendable {
    // @unchecked: written once before the semaphore is signalled, read after the wait.
    var code: Int32 = 1
}

switch arguments.first {
case "reachability": exit(reachability())
default:
    say("usage: ConveyorTestHelper reachability")
    exit(2)
}

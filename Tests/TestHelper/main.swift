// ConveyorTestHelper: runs a scenario in its own process for the tests.
//
//   ConveyorTestHelper reachability   (run inside `unshare -n`: loopback starts down)
//     prints "status <description> <seconds since the link was brought up>" per change,
//     brings `lo` up with `ip link set lo up` after the first status, exits 0 once reachable
//     (1 after 5 s without).
//   ConveyorTestHelper proxy-get <base-url>   (run with http_proxy set)
//     GETs <base-url>/proxied through the curl transport and prints "status N".
//   ConveyorTestHelper signal-at-install
//     SIGTERM sent to itself as soon as GracefulShutdown.install returns: handled, exit 0.
//   ConveyorTestHelper drain-download <base-url> <temp-dir> <transport>
//     SIGTERM during a held file download: the failure block's line comes before the exit.
//   ConveyorTestHelper outbox <base-url> <directory> <count> <transport> <body-bytes>
//     sends through a durable outbox and reports results (OutboxChild.swift).
//   ConveyorTestHelper outbox-retry-dead <directory>
//     puts every dead letter of the outbox back in line, printing each step (OutboxChild.swift).
//   ConveyorTestHelper redirect-chaos <base-url> <transport> <iterations>
//     pauses, resumes and cancels GETs of redirect/2 at random moments; "done N" when each
//     completed once (RedirectChaosChild.swift).
//   ConveyorTestHelper netns <queue|cache|outbox> <transport>   (run inside `unshare --net`)
//     takes the loopback down and up around queue suspension, the offline cache policy or
//     outbox parking, with the real reachability monitor (NetnsChild.swift).
//   ConveyorTestHelper cache-read <directory> <url> <disk-capacity>
//     looks a URL up in an HTTPCache and prints its peak memory (CacheReadChild.swift).
import Conveyor
import Foundation
import Synchronization

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
        var ip: Process?
        for await status in statuses.stream {
            let since =
                linkUp.map { ContinuousClock.now - $0 }.map {
                    String(format: "%.3f", Double($0.components.attoseconds) / 1e18 + Double($0.components.seconds))
                } ?? "-"
            say("status \(status) \(since)")
            if linkUp == nil {
                linkUp = ContinuousClock.now
                // Not waited for: in a namespace whose loopback is down, Foundation's Process
                // cannot set up its CFSocket wake-up pair ("Could not create wakeup socket pair"),
                // and waitUntilExit() then hung in about one run in twelve under load.
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
                process.arguments = ["link", "set", "lo", "up"]
                do { try process.run() } catch { say("error \(error)") }
                ip = process
            } else if case .reachable = status {
                outcome.code = 0
                done.signal()
                _ = ip
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

/// `drain <base-url> <temp-dir>`: a throttled multipart upload (~1 s, body file in temp-dir)
/// and a 60 s drip download, with GracefulShutdown(timeout: 10 s) installed; prints `ready`
/// once both run, `draining` on the first signal, each completion, then `exit <status> after
/// <seconds since the signal>`. `drain-twice` sends itself a second SIGTERM once draining.
func drain(baseURL: URL, temporaryDirectory: URL, signalTwice: Bool) -> Never {
    var configuration = HTTPClient.Configuration.default
    configuration.multipartMemoryThreshold = 0
    configuration.temporaryDirectory = temporaryDirectory
    let client = HTTPClient(baseURL: baseURL, configuration: configuration)
    let started = AsyncStream.makeStream(of: Void.self)
    let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidStart, object: nil, queue: nil) { _ in
        started.continuation.yield()
    }
    let signalledAt = Mutex<ContinuousClock.Instant?>(nil)
    _ = NotificationCenter.default.addObserver(forName: .conveyorShutdownWillDrain, object: nil, queue: nil) { _ in
        signalledAt.withLock { $0 = .now }
        say("draining")
        // The second signal comes from here, so the parent's scheduling cannot delay it.
        if signalTwice { kill(getpid(), SIGTERM) }
    }
    // 10 s: the upload must finish inside the deadline, and it takes ~1 s on a quiet machine
    // but several on a loaded one (a 2 s deadline would make the verdict a race with the load).
    GracefulShutdown.install(clients: [client], timeout: 10) { status in
        let elapsed = signalledAt.withLock { $0 }.map { ContinuousClock.now - $0 }
        // No flush of the callback queue here: drain has returned after the completions ran.
        let seconds = elapsed.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 } ?? -1
        say(String(format: "exit %d after %.3f", status, seconds))
        exit(status)
    }
    client.post(
        "upload",
        constructingBody: { form in
            form.append(data: Data(repeating: 7, count: 64 * 1024), name: "file", fileName: "f.bin", mimeType: "application/octet-stream")
            form.throttleBandwidth(packetSize: 8 * 1024, delay: 0.1)
        }, success: { _, _ in say("upload ok") }, failure: { _, error in say("upload failed \(error)") })
    client.get(
        "drip", parameters: ["numbytes": 100, "duration": 60], success: { _, _ in say("download ok") },
        failure: { _, error in say("download failed \(error)") })
    Task {
        var count = 0
        for await _ in started.stream {
            count += 1
            if count == 2 {
                say("ready")
                NotificationCenter.default.removeObserver(observer)
                break
            }
        }
    }
    dispatchMain()
}

/// `drain-download <base-url> <temp-dir> <transport>`: a file download into temp-dir that the
/// server holds (a 300 s drip: the parent signals when it reads `ready`, and a parent whose
/// test threads are all busy read it more than 20 s late once, after a 20 s drip had ended
/// with `download ok`), with GracefulShutdown(timeout: 0.3 s): prints `ready` once it
/// runs, `draining` on the signal, `download failed <error>` from its failure block (after a
/// moment's work, as an app's block does), `download ok` if it succeeds, `exit <status>` when
/// the drain returned. Nothing flushes the callback queue before the exit: a line missing is
/// an outcome the app never heard.
func drainDownload(baseURL: URL, temporaryDirectory: URL, transport: String) -> Never {
    var configuration = HTTPClient.Configuration.default
    configuration.transport = transport == "urlsession" ? .urlSession : .curl
    configuration.cache = nil
    configuration.monitorsReachability = false
    let client = HTTPClient(baseURL: baseURL, configuration: configuration)
    let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidStart, object: nil, queue: nil) { _ in
        say("ready")
    }
    _ = NotificationCenter.default.addObserver(forName: .conveyorShutdownWillDrain, object: nil, queue: nil) { _ in say("draining") }
    // Foundation.exit, as the default does; the line shows that the drain returned.
    GracefulShutdown.install(clients: [client], timeout: 0.3) { status in
        say("exit \(status)")
        exit(status)
    }
    client.download(
        "drip", parameters: ["numbytes": 100, "duration": 300], to: .file(temporaryDirectory.appendingPathComponent("download.bin")),
        success: { _, _ in say("download ok") },
        failure: { _, error in
            // The app's work before it records the outcome (not synchronisation).
            Thread.sleep(forTimeInterval: 0.05)
            say("download failed \(error)")
        })
    _ = observer
    dispatchMain()
}

/// `signal-at-install`: installs GracefulShutdown (no clients) and sends itself SIGTERM the
/// moment `install` returns; prints `exit <status>` from the exit hook. A signal lost between
/// install and the source's registration leaves the process running.
func signalAtInstall() -> Never {
    GracefulShutdown.install(clients: [], timeout: 0) { status in
        say("exit \(status)")
        exit(status)
    }
    kill(getpid(), SIGTERM)
    dispatchMain()
}

/// One GET of `<base-url>/proxied` through the curl transport; prints "status N" (and the
/// error, if any). Run with `http_proxy` set to show libcurl's environment proxy support.
func proxyGet(baseURL: URL) -> Never {
    var configuration = HTTPClient.Configuration()
    configuration.transport = .curl
    configuration.cache = nil
    configuration.monitorsReachability = false
    let client = HTTPClient(baseURL: baseURL, configuration: configuration)
    let done = DispatchSemaphore(value: 0)
    client.get(
        "proxied",
        success: { operation, _ in
            say("status \(operation.response?.statusCode ?? 0)")
            done.signal()
        },
        failure: { operation, error in
            say("status \(operation.response?.statusCode ?? 0) error \(error)")
            done.signal()
        })
    exit(done.wait(timeout: .now() + 60) == .success ? 0 : 1)  // 60 s only ends a hang
}

switch arguments.first {
case "reachability": exit(reachability())
case "outbox": outboxChild(arguments: Array(arguments.dropFirst()))
case "outbox-retry-dead": outboxRetryDeadChild(arguments: Array(arguments.dropFirst()))
case "proxy-get": proxyGet(baseURL: URL(string: Array(arguments.dropFirst())[0])!)
case "netns": netnsChild(arguments: Array(arguments.dropFirst()))
case "cache-read": cacheReadChild(arguments: Array(arguments.dropFirst()))
case "signal-at-install": signalAtInstall()
case "redirect-chaos": redirectChaosChild(arguments: Array(arguments.dropFirst()))
case "drain-download":
    let rest = Array(arguments.dropFirst())
    drainDownload(baseURL: URL(string: rest[0])!, temporaryDirectory: URL(fileURLWithPath: rest[1]), transport: rest[2])
case "drain", "drain-twice":
    let rest = Array(arguments.dropFirst())
    drain(baseURL: URL(string: rest[0])!, temporaryDirectory: URL(fileURLWithPath: rest[1]), signalTwice: arguments.first == "drain-twice")
default:
    say("usage: ConveyorTestHelper reachability | drain <base-url> <temp-dir> | proxy-get <base-url>")
    exit(2)
}

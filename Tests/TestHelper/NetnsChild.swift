import ConveyorTesting
import Foundation
import Glibc
import Synchronization

// Testable: outbox parking is read through Outbox's internal `settle()` and
// `waitingForNetworkCount`, as the in-process outbox tests do (debug builds only, as the tests).
@testable import Conveyor

/// `netns <queue|cache|outbox> <curl|urlsession>`, run inside `unshare --net`: brings the
/// namespace's loopback up, serves a LocalHTTPServer on it, points a client with the real
/// reachability monitor (netlink, the routing table) at it, then takes the loopback down and
/// up again around the behaviour under test, printing what it saw; the test reads the lines.
///
/// - `queue`: `suspendsQueueWhenUnreachable`; a GET enqueued while down prints whether it
///   started while down (`down started <bool>`), then
///   `outcome <status> attempts <n>` once the loopback is back.
/// - `cache`: `returnCacheDataWhenUnreachable`; prints `down <body> <source>` for a GET while
///   down and `up <body> <source>` after.
/// - `outbox`: three items sent while down print `down parked <n> received <n>`, then
///   `result <index> <status> attempts <n>` as they are delivered after.
///
/// Every wait is for an event (a status, a completion, a result), except the 0.5 s grace in
/// which a queued GET must not start; the process gives up after 60 s only so that a missing
/// event fails the test instead of hanging it.
func netnsChild(arguments: [String]) -> Never {
    guard arguments.count == 2, ["queue", "cache", "outbox"].contains(arguments[0]) else {
        say("usage: netns <queue|cache|outbox> <curl|urlsession>")
        exit(2)
    }
    let done = DispatchSemaphore(value: 0)
    let outcome = UncheckedResult()
    Task {
        do {
            try await NetnsScenario(transport: arguments[1] == "urlsession" ? .urlSession : .curl).run(arguments[0])
            outcome.code = 0
        } catch {
            say("error \(error)")
        }
        done.signal()
    }
    if done.wait(timeout: .now() + 60) == .timedOut { say("error gave up after 60 s") }
    exit(outcome.code)
}

struct NetnsFailure: Error, CustomStringConvertible {
    let description: String
}

/// Sets the loopback's IFF_UP flag with SIOCSIFFLAGS: no child process (Foundation's Process
/// cannot set up its wake-up socket pair while the loopback is down).
func setLoopback(up: Bool) throws {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw NetnsFailure(description: "socket: errno \(errno)") }
    defer { close(fd) }
    var request = ifreq()
    withUnsafeMutableBytes(of: &request.ifr_ifrn.ifrn_name) { $0.copyBytes(from: Array("lo".utf8)) }
    let getFlags: UInt = 0x8913  // SIOCGIFFLAGS
    let setFlags: UInt = 0x8914  // SIOCSIFFLAGS
    let interfaceUp: Int16 = 0x1  // IFF_UP
    guard withUnsafeMutablePointer(to: &request, { ioctl(fd, getFlags, $0) }) == 0 else {
        throw NetnsFailure(description: "SIOCGIFFLAGS: errno \(errno)")
    }
    if up { request.ifr_ifru.ifru_flags |= interfaceUp } else { request.ifr_ifru.ifru_flags &= ~interfaceUp }
    guard withUnsafeMutablePointer(to: &request, { ioctl(fd, setFlags, $0) }) == 0 else {
        throw NetnsFailure(description: "SIOCSIFFLAGS: errno \(errno)")
    }
}

struct NetnsScenario {
    let transport: HTTPClient.TransportKind

    /// The client's statuses, awaited one by one.
    final class Statuses: Sendable {
        private let stream = AsyncStream.makeStream(of: NetworkReachabilityManager.Status.self)
        var handler: @Sendable (NetworkReachabilityManager.Status) -> Void { { [stream] in stream.continuation.yield($0) } }

        /// Waits for the next status matching `wanted`, printing each one seen.
        func await(_ wanted: (NetworkReachabilityManager.Status) -> Bool) async throws {
            for await status in stream.stream {
                say("status \(status)")
                if wanted(status) { return }
            }
            throw NetnsFailure(description: "the statuses ended")
        }
    }

    func run(_ scenario: String) async throws {
        try setLoopback(up: true)
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.monitorsReachability = true
        configuration.cache = nil
        switch scenario {
        case "queue": configuration.suspendsQueueWhenUnreachable = true
        case "cache":
            configuration.cache = HTTPCache(diskCapacity: 0)
            configuration.cachePolicy = .returnCacheDataWhenUnreachable
        default: break
        }
        let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
        let statuses = Statuses()
        client.setReachabilityStatusChangeHandler(statuses.handler)
        try await statuses.await { $0 != .notReachable && $0 != .unknown }
        switch scenario {
        case "queue": try await queue(server, client, statuses)
        case "cache": try await cache(server, client, statuses)
        default: try await outbox(server, client, statuses)
        }
    }

    private func goOffline(_ statuses: Statuses) async throws {
        try setLoopback(up: false)
        try await statuses.await { $0 == .notReachable }
    }

    private func goOnline(_ statuses: Statuses) async throws {
        try setLoopback(up: true)
        try await statuses.await { $0 != .notReachable && $0 != .unknown }
    }

    /// A GET enqueued while the loopback is down waits in the suspended queue, then succeeds.
    private func queue(_ server: LocalHTTPServer, _ client: HTTPClient, _ statuses: Statuses) async throws {
        server.route("/ok") { _ in .text("ok") }
        try await goOffline(statuses)
        say("down suspended \(client.operationQueue.isSuspended)")
        // Without the suspension the operation would start and wait for a connection by itself
        // (and succeed all the same once the loopback is back): what shows the queue held it is
        // that it did not start. A start is an event that must not come, so it is waited for
        // over a grace (as duplicate completions are in the tests); it comes within
        // milliseconds when the queue is not suspended.
        let started = AsyncStream.makeStream(of: Void.self)
        let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidStart, object: nil, queue: nil) { note in
            if (note.object as? HTTPRequestOperation)?.request.url?.path == "/ok" { started.continuation.yield() }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let finished = AsyncStream.makeStream(of: String.self)
        client.get(
            "ok",
            success: { operation, _ in
                finished.continuation.yield(
                    "outcome \(operation.response?.statusCode ?? 0) attempts \(operation.metrics?.attemptCount ?? 0)")
            },
            failure: { _, error in finished.continuation.yield("outcome failed \(error)") })
        say("down started \(await firstEvent(of: started.stream, within: .milliseconds(500)))")
        try await goOnline(statuses)
        for await line in finished.stream {
            say(line)
            break
        }
        say("received \(server.requestCount(path: "/ok"))")
    }

    /// While down, the stale stored response answers without a connection being tried.
    private func cache(_ server: LocalHTTPServer, _ client: HTTPClient, _ statuses: Statuses) async throws {
        let counter = ResponseCounter()
        server.route("/counter") { _ in
            var response = LocalHTTPServer.Response.text("\(counter.next())")
            response.headers["Cache-Control"] = "max-age=0"
            return response
        }
        func get(_ label: String) async throws {
            let response = try await client.response(method: .get, path: "counter")
            say("\(label) \(String(decoding: response.data, as: UTF8.self)) \(response.source)")
        }
        try await get("filled")
        try await goOffline(statuses)
        try await get("down")
        try await goOnline(statuses)
        try await get("up")
    }

    /// Items sent while down are parked, not attempted; back up, they are delivered in order.
    private func outbox(_ server: LocalHTTPServer, _ client: HTTPClient, _ statuses: Statuses) async throws {
        server.route("/apply", method: "POST") { _ in .text("applied", status: 201) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-netns-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var settings = Outbox.Configuration.default
        settings.baseDelay = 0.01
        settings.maximumDelay = 0.05
        let outbox = try client.outbox(directory: directory, configuration: settings)
        let results = AsyncStream.makeStream(of: Outbox.ItemResult.self)
        outbox.setResultHandler { results.continuation.yield($0) }
        try await goOffline(statuses)
        // The outbox hears the change through a handler of its own, a hop after the client's
        // handler above: an item sent before that hop is attempted (and fails to connect, then
        // waits for its retry) instead of parked. Wait for the outbox's own view (bounded).
        let deadline = ContinuousClock.now + .seconds(30)  // only ends a hang, inside the helper's 60 s
        while !outbox.state.withLock({ $0.offline }) {
            guard ContinuousClock.now < deadline else { throw NetnsFailure(description: "the outbox never heard the loopback go down") }
            try await Task.sleep(for: .milliseconds(1))
        }
        let ids = try (0..<3).map { try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["n": $0]) }
        outbox.settle()  // the first item was taken and parked
        say("down parked \(outbox.waitingForNetworkCount) received \(server.requestCount(path: "/apply"))")
        try await goOnline(statuses)
        var seen = 0
        for await result in results.stream {
            let index = ids.firstIndex(of: result.id).map(String.init) ?? "unknown"
            switch result.outcome {
            case .succeeded(let response): say("result \(index) \(response.statusCode) attempts \(result.item?.attempts ?? -1)")
            case .failed(let error), .deadLettered(let error): say("result \(index) failed \(error)")
            }
            seen += 1
            if seen == ids.count { break }
        }
        outbox.close()
    }
}

/// Counts the requests a route answered.
final class ResponseCounter: Sendable {
    private let value = Mutex(0)
    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
}

/// Whether `stream` yields within `grace`: for an event that must not come.
func firstEvent(of stream: AsyncStream<Void>, within grace: Duration) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next() != nil
        }
        group.addTask {
            try? await Task.sleep(for: grace)
            return false
        }
        let result = await group.next() ?? false
        group.cancelAll()
        return result
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

/// A probe whose answer the test sets, and an event source the test fires.
final class ScriptedReachability: ReachabilityProbe, ReachabilityEventSource, Sendable {
    private let state = Lock<(status: NetworkReachabilityManager.Status, handlers: [UUID: @Sendable () -> Void])>((.notReachable, [:]))

    func status(for target: NetworkReachabilityManager.Target) -> NetworkReachabilityManager.Status { state.withLock { $0.status } }

    func subscribe(_ handler: @escaping @Sendable () -> Void) -> UUID {
        let token = UUID()
        state.withLock { $0.handlers[token] = handler }
        return token
    }

    func unsubscribe(_ token: UUID) { state.withLock { _ = $0.handlers.removeValue(forKey: token) } }

    /// Changes the answer and fires the event.
    func set(_ status: NetworkReachabilityManager.Status) {
        let handlers = state.withLock { state in
            state.status = status
            return Array(state.handlers.values)
        }
        handlers.forEach { $0() }
    }
}

@Suite("Reachability")
struct ReachabilityTests {
    /// Collects statuses on a private queue and lets the test await the next one.
    final class Statuses: Sendable {
        private let stream = AsyncStream.makeStream(of: NetworkReachabilityManager.Status.self)
        var handler: @Sendable (NetworkReachabilityManager.Status) -> Void { { [stream] in stream.continuation.yield($0) } }
        func next() async -> NetworkReachabilityManager.Status? {
            var iterator = stream.stream.makeAsyncIterator()
            return await iterator.next()
        }
    }

    @Test("Transitions from the probe reach the handler and the notification, in order; the first status comes at start")
    func transitions() async throws {
        let scripted = ScriptedReachability()
        let manager = NetworkReachabilityManager(target: .host("example.com"), probe: scripted, events: scripted)
        let statuses = Statuses()
        let notified = Lock<[NetworkReachabilityManager.Status]>([])
        let observer = NotificationCenter.default.addObserver(forName: .conveyorReachabilityDidChange, object: manager, queue: nil) {
            note in
            if let status = note.userInfo?["status"] as? NetworkReachabilityManager.Status { notified.withLock { $0.append(status) } }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        #expect(manager.status == .unknown)
        let queue = DispatchQueue(label: "test.reachability")
        manager.startMonitoring(queue: queue, onChange: statuses.handler)
        #expect(await statuses.next() == .notReachable)
        scripted.set(.reachable(.ethernetOrWiFi))
        #expect(await statuses.next() == .reachable(.ethernetOrWiFi))
        scripted.set(.reachable(.ethernetOrWiFi))  // no change: no call
        scripted.set(.reachable(.cellular))
        #expect(await statuses.next() == .reachable(.cellular))
        #expect(manager.isReachable)
        manager.stopMonitoring()
        scripted.set(.notReachable)
        #expect(manager.status == .reachable(.cellular))
        queue.sync {}  // the notification is posted just after the handlers, on this queue
        #expect(notified.withLock { $0 } == [.notReachable, .reachable(.ethernetOrWiFi), .reachable(.cellular)])
    }

    @Test("The client suspends its queue while unreachable and runs the kept operations when the host returns")
    func queueSuspension() async throws {
        let scripted = ScriptedReachability()
        scripted.set(.notReachable)
        var configuration = HTTPClient.Configuration.default
        configuration.reachabilityProbe = scripted
        configuration.reachabilityEvents = scripted
        configuration.suspendsQueueWhenUnreachable = true
        try await withServer(configuration: configuration) { server, client in
            let statuses = Statuses()
            client.setReachabilityStatusChangeHandler(statuses.handler)
            #expect(await statuses.next() == .notReachable)
            #expect(client.operationQueue.isSuspended && client.reachabilityStatus == .notReachable)
            let probe = CompletionProbe()
            client.get("get", success: probe.success, failure: probe.failure)
            #expect(server.receivedRequests.isEmpty && client.operationQueue.operationCount == 1)
            scripted.set(.reachable(.ethernetOrWiFi))
            #expect(await statuses.next() == .reachable(.ethernetOrWiFi))
            #expect(await probe.outcome().error == nil)
            #expect(!client.operationQueue.isSuspended)
        }
    }

    @Test("The Linux probe sees 127.0.0.1 and localhost as reachable over loopback")
    func linuxProbe() async throws {
        let manager = NetworkReachabilityManager(address: "127.0.0.1")
        let statuses = Statuses()
        manager.startMonitoring(queue: DispatchQueue(label: "test.reachability.lo"), onChange: statuses.handler)
        #expect(await statuses.next() == .reachable(.loopback))
        manager.stopMonitoring()
        let client = HTTPClient(baseURL: URL(string: "http://localhost:9/")!)
        let clientStatuses = Statuses()
        client.setReachabilityStatusChangeHandler(clientStatuses.handler)
        #expect(await clientStatuses.next() == .reachable(.loopback))
        #expect("\(NetworkReachabilityManager.Status.reachable(.loopback))" == "reachable (loopback)")
    }

    @Test("In a private network namespace: loopback down is not reachable; bringing it up is seen from the kernel's event")
    func networkNamespace() throws {
        let helper = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("ConveyorTestHelper")
        let output = Pipe()
        let process = try ChildProcess(
            "/usr/bin/unshare", ["--net", helper.path, "reachability"], standardOutput: .pipe(output), standardError: .pipe(output))
        let text = String(decoding: PipeIO.readToEnd(from: output.fileHandleForReading), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "unshare --net (root needed) or the helper failed: \(text)")
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("status ") }
        #expect(lines.first == "status not reachable -", "\(text)")
        let last = try #require(lines.last?.split(separator: " "))
        #expect(lines.last?.contains("reachable (loopback)") == true, "\(text)")
        // The bound is the promise itself: without netlink, the manager polls every 5 s from its
        // start, just before the link went up. Seen in under 4 s, the change came from the
        // kernel's netlink event, not from a poll.
        #expect((Double(last.last ?? "") ?? 99) < 4.0, "\(text)")
    }
}

@Suite("Network activity indicator")
struct ActivityIndicatorTests {
    /// A clock the test advances by hand.
    final class ManualScheduler: NetworkActivityIndicatorManager.Scheduler, Sendable {
        private let state = Lock<(now: TimeInterval, work: [(id: Int, at: TimeInterval, run: @Sendable () -> Void)], next: Int)>((0, [], 0))

        func schedule(after delay: TimeInterval, _ work: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
            let id = state.withLock { state -> Int in
                state.next += 1
                state.work.append((state.next, state.now + delay, work))
                return state.next
            }
            return { [weak self] in self?.state.withLock { $0.work.removeAll { $0.id == id } } }
        }

        func advance(by seconds: TimeInterval) {
            let due = state.withLock { state -> [@Sendable () -> Void] in
                state.now += seconds
                let due = state.work.filter { $0.at <= state.now + 1e-9 }
                state.work.removeAll { $0.at <= state.now + 1e-9 }
                return due.map(\.run)
            }
            due.forEach { $0() }
        }
    }

    @Test("5 overlapping activities: visible once after the activation delay, hidden once after the completion delay")
    func overlapping() {
        let scheduler = ManualScheduler()
        let queue = DispatchQueue(label: "test.activity")
        let manager = NetworkActivityIndicatorManager(queue: queue, scheduler: scheduler)
        let changes = Lock<[Bool]>([])
        manager.visibilityChangeHandler = { visible in changes.withLock { $0.append(visible) } }
        for _ in 0..<5 { manager.incrementActivityCount() }
        scheduler.advance(by: 0.9)
        #expect(!manager.isNetworkActivityIndicatorVisible)
        scheduler.advance(by: 0.2)
        #expect(manager.isNetworkActivityIndicatorVisible && manager.activityCount == 5)
        for _ in 0..<4 { manager.decrementActivityCount() }
        scheduler.advance(by: 1)
        #expect(manager.isNetworkActivityIndicatorVisible)
        manager.decrementActivityCount()
        scheduler.advance(by: 0.1)
        manager.incrementActivityCount()  // back-to-back: no flicker
        manager.decrementActivityCount()
        scheduler.advance(by: 0.1)
        #expect(manager.isNetworkActivityIndicatorVisible)
        scheduler.advance(by: 0.1)
        #expect(!manager.isNetworkActivityIndicatorVisible)
        manager.decrementActivityCount()
        #expect(manager.activityCount == 0)
        queue.sync {}
        #expect(changes.withLock { $0 } == [true, false])
    }

    @Test("The dispatch scheduler runs work at its delay and never runs work cancelled before it")
    func dispatchSchedulerCancels() {
        let queue = DispatchQueue(label: "test.activity.dispatch")
        let scheduler = NetworkActivityIndicatorManager.DispatchScheduler(queue: queue)
        let ran = Lock<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let cancel = scheduler.schedule(after: 0.05) { ran.withLock { $0.append("cancelled") } }
        _ = scheduler.schedule(after: 0.02) { ran.withLock { $0.append("first") } }
        _ = scheduler.schedule(after: 0.1) {
            ran.withLock { $0.append("last") }
            done.signal()
        }
        cancel()
        cancel()  // a second cancel does nothing
        // One serial queue, deadlines in order: the cancelled work was due before the last one.
        #expect(done.wait(timeout: .now() + 60) == .success)  // not a hang: due after 0.1 s
        queue.sync {}
        #expect(ran.withLock { $0 } == ["first", "last"])
    }

    @Test("activationDelay = 0 is AFNetworking 1.x's indicator: shown while a real request runs, hidden 0.17 s after")
    func afNetworking1Defaults() async throws {
        let scheduler = ManualScheduler()
        let manager = NetworkActivityIndicatorManager(queue: DispatchQueue(label: "test.activity3"), scheduler: scheduler)
        #expect(manager.activationDelay == 1.0 && manager.completionDelay == 0.17)
        manager.activationDelay = 0
        try await withServer { server, client in
            manager.operationFilter = { $0.request.url?.port == server.port }
            manager.isEnabled = true
            defer { manager.isEnabled = false }
            let held = HeldRoute(server, body: "ok")
            let probe = CompletionProbe()
            client.get("hold", success: probe.success, failure: probe.failure)
            await held.arrived()
            scheduler.advance(by: 0)
            #expect(manager.isNetworkActivityIndicatorVisible)
            held.release()
            _ = await probe.outcome()
            scheduler.advance(by: 0.1)
            #expect(manager.isNetworkActivityIndicatorVisible)
            scheduler.advance(by: 0.1)
            #expect(!manager.isNetworkActivityIndicatorVisible)
        }
    }

    @Test("A short request never shows the indicator; enabled, it counts real operations")
    func countsOperations() async throws {
        let scheduler = ManualScheduler()
        let manager = NetworkActivityIndicatorManager(queue: DispatchQueue(label: "test.activity2"), scheduler: scheduler)
        try await withServer { server, client in
            // Other suites run at the same time: count only this test's server.
            manager.operationFilter = { $0.request.url?.port == server.port }
            manager.isEnabled = true
            defer { manager.isEnabled = false }
            let held = HeldRoute(server, body: "ok")
            let probe = CompletionProbe()
            client.get("hold", success: probe.success, failure: probe.failure)
            await held.arrived()
            #expect(manager.activityCount == 1)
            held.release()
            _ = await probe.outcome()
            scheduler.advance(by: 2)
            #expect(!manager.isNetworkActivityIndicatorVisible && manager.activityCount == 0)
        }
    }
}

/// Queue suspension, the offline cache policy and outbox parking against a real network change:
/// `ConveyorTestHelper netns` runs inside `unshare --net` (root needed, as for the namespace test
/// above) with the real reachability monitor, and takes the namespace's loopback — the only
/// way to its server — down and up again (NetnsChild.swift).
@Suite("Reachability: a real network change in a private namespace")
struct NetworkNamespaceTests {
    /// The helper's lines (its standard output and error), once it has exited 0.
    func run(_ scenario: String, _ transport: HTTPClient.TransportKind) async throws -> [String] {
        let helper = ExampleProcess.executable("ConveyorTestHelper")
        let output = Pipe()
        let process = try ChildProcess(
            "/usr/bin/unshare", ["--net", helper.path, "netns", scenario, transport == .curl ? "curl" : "urlsession"],
            standardOutput: .pipe(output), standardError: .pipe(output))
        let text = try await offPool { String(decoding: PipeIO.readToEnd(from: output.fileHandleForReading), as: UTF8.self) }
        await process.exited()
        #expect(process.terminationStatus == 0, "unshare --net (root needed) or the helper failed: \(text)")
        return text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("status ") }
    }

    @Test(
        "Queue suspension: a GET enqueued while the loopback is down waits, and succeeds once it is back up",
        arguments: HTTPClient.TransportKind.testedKinds)
    func queueSuspension(transport: HTTPClient.TransportKind) async throws {
        let lines = try await run("queue", transport)
        // Without the suspension the GET would start at once and wait for a connection itself.
        #expect(lines == ["down suspended true", "down started false", "outcome 200 attempts 1", "received 1"], "\(lines)")
    }

    @Test(
        "returnCacheDataWhenUnreachable: while the loopback is down the stale entry answers without a connection; back up, the network does",
        arguments: HTTPClient.TransportKind.testedKinds)
    func offlineCachePolicy(transport: HTTPClient.TransportKind) async throws {
        let lines = try await run("cache", transport)
        // `cache`, not `staleOnError`: reachability answered, no connection was tried and failed.
        #expect(lines == ["filled 1 network", "down 1 cache", "up 2 network"], "\(lines)")
    }

    @Test(
        "Outbox: items sent while the loopback is down are parked, not attempted; back up, they are delivered in order",
        arguments: HTTPClient.TransportKind.testedKinds)
    func outboxParking(transport: HTTPClient.TransportKind) async throws {
        let lines = try await run("outbox", transport)
        #expect(
            lines == ["down parked 1 received 0", "result 0 201 attempts 0", "result 1 201 attempts 0", "result 2 201 attempts 0"],
            "\(lines)")
    }
}

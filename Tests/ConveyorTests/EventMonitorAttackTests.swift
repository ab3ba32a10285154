import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// Findings of the independent attack on event monitors (round 4), each a test that failed or
/// crashed before its fix.
@Suite("Event monitors: what the independent attack broke", .timeLimit(.notAHang))
struct EventMonitorAttackTests {
    /// Records each operation's events apart, and says when one finished.
    final class PerOperation: EventMonitor {
        // Sendable, checked by the compiler: the log is behind a lock; the rest is immutable.
        private let log = Lock<[ObjectIdentifier: [String]]>([:])
        let finished = AsyncStream.makeStream(of: Void.self)
        let onStart: (@Sendable (HTTPRequestOperation) -> Void)?
        let onFinish: (@Sendable () -> Void)?

        init(onStart: (@Sendable (HTTPRequestOperation) -> Void)? = nil, onFinish: (@Sendable () -> Void)? = nil) {
            self.onStart = onStart
            self.onFinish = onFinish
        }

        func events(of operation: HTTPRequestOperation) -> [String] { log.withLock { $0[ObjectIdentifier(operation)] ?? [] } }
        var all: [[String]] { log.withLock { Array($0.values) } }
        private func add(_ operation: HTTPRequestOperation, _ event: String) {
            log.withLock { $0[ObjectIdentifier(operation), default: []].append(event) }
        }

        func requestWasCreated(_ operation: HTTPRequestOperation) { add(operation, "created") }
        func requestDidStart(_ operation: HTTPRequestOperation, request: URLRequest) {
            add(operation, "start")
            onStart?(operation)
        }
        func request(_ operation: HTTPRequestOperation, willSend request: URLRequest, attempt: Int) { add(operation, "send") }
        func requestIsWaitingForConnection(_ operation: HTTPRequestOperation) { add(operation, "waiting") }
        func requestGotConnection(_ operation: HTTPRequestOperation) { add(operation, "connected") }
        func request(_ operation: HTTPRequestOperation, didReceive response: HTTPResponseHead) { add(operation, "head") }
        func requestDidFinish(
            _ operation: HTTPRequestOperation, request: URLRequest, response: HTTPResponseHead?, error: ConveyorError?,
            metrics: OperationMetrics?
        ) {
            add(operation, "finish")
            onFinish?()
            finished.continuation.yield()
        }
    }

    @Test(
        "flushEventMonitors() called from a monitor returns at once (it trapped: a queue waiting for itself)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func flushFromMonitor(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let holder = Lock<HTTPClient?>(nil)
        let monitor = PerOperation(onFinish: { holder.withLock { $0 }?.flushEventMonitors() })
        let client = testClient(server, transport) { $0.eventMonitors = [monitor] }
        holder.withLock { $0 = client }
        defer { holder.withLock { $0 = nil } }
        _ = try await client.response(method: .get, path: "get")
        for await _ in monitor.finished.stream { break }
        client.flushEventMonitors()
        #expect(monitor.all.first?.last == "finish")
    }

    @Test(
        "No event of an operation reaches a monitor after its finish, even when a monitor cancels it as it starts",
        arguments: HTTPClient.TransportKind.testedKinds)
    func nothingAfterFinish(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let monitor = PerOperation(onStart: { $0.cancel() })
        let client = testClient(server, transport) { $0.eventMonitors = [monitor] }
        let count = 60
        // Kept alive, so that no two share an ObjectIdentifier in the monitor's log.
        var operations: [HTTPRequestOperation] = []
        for index in 0..<count {
            let probe = CompletionProbe()
            let operation = client.operation(
                with: try client.request(method: .get, path: index.isMultiple(of: 2) ? "get" : "bytes/10"), success: nil, failure: nil)
            probe.attach(to: operation)
            operations.append(operation)
            client.enqueue(operation)
            _ = await probe.outcome()
        }
        for await _ in monitor.finished.stream.prefix(count) {}
        client.flushEventMonitors()
        let sequences = monitor.all
        #expect(sequences.count == count)
        for events in sequences {
            #expect(events.last == "finish" && events.filter { $0 == "finish" }.count == 1, "\(events)")
        }
        withExtendedLifetime(operations) {}
    }

    @Test(
        "An operation paused before its queue started it is announced when resumed: notification and requestDidStart",
        arguments: HTTPClient.TransportKind.testedKinds)
    func pausedBeforeStartAnnounced(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let monitor = PerOperation()
        let client = testClient(server, transport) { $0.eventMonitors = [monitor] }
        let probe = CompletionProbe()
        let operation = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
        probe.attach(to: operation)
        let started = AsyncStream.makeStream(of: Void.self)
        let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidStart, object: operation, queue: nil) { _ in
            started.continuation.yield()
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        operation.pause()
        // What a queue does with it: starts it, and the paused operation waits (started by hand
        // here, so the test knows the start came first); resume runs it.
        operation.start()
        #expect(operation.isPaused)
        operation.resume()
        #expect(await probe.outcome().error == nil)
        for await _ in started.stream { break }
        for await _ in monitor.finished.stream { break }
        #expect(monitor.events(of: operation).contains("start"), "\(monitor.events(of: operation))")
    }

    @Test(
        "With a cache, an attempt sent to the network reports its connection wait too (the cache swallowed it)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func connectionEventsThroughTheCache(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let monitor = PerOperation()
        let client = testClient(server, transport) {
            $0.cache = HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 0, directory: nil)
            $0.eventMonitors = [monitor]
        }
        _ = try await client.response(method: .get, path: "get")
        for await _ in monitor.finished.stream { break }
        let events = try #require(monitor.all.first)
        #expect(events == ["created", "start", "send", "waiting", "connected", "head", "finish"], "\(events)")
    }

    @Test("A URL's user name is hidden with its password, in the metrics line and the logger's")
    func userNameHidden() async throws {
        let url = try #require(URL(string: "http://SECRETUSER11:SECRETPW3@127.0.0.1:8080/get?page=2"))
        let text = Redaction().url(url)
        #expect(!text.contains("SECRETUSER11") && !text.contains("SECRETPW3"), "\(text)")
        let line = MetricsLogMonitor().line(request: URLRequest(url: url), response: nil, error: nil, metrics: nil)
        #expect(!line.contains("SECRETUSER11") && !line.contains("SECRETPW3"), "\(line)")
    }
}

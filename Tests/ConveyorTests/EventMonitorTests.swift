import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// `HTTPClient.Configuration.eventMonitors` against a real server: which events arrive, in which
/// order, with which values, on which queue — and that a stuck monitor stalls nothing.
@Suite("Event monitors: every step of a request, in order, off the transfer's thread", .timeLimit(.notAHang))
struct EventMonitorTests {
    /// Writes each event as a line, and says when an operation finished.
    final class Recorder: EventMonitor {
        // Sendable, checked by the compiler: the lines are behind a lock.
        private let lines = Lock<[String]>([])
        let finished = AsyncStream.makeStream(of: Void.self)
        /// Every event line as it arrives, for a test that waits for one.
        let arrivals = AsyncStream.makeStream(of: String.self)
        let onStart: (@Sendable () -> Void)?

        init(onStart: (@Sendable () -> Void)? = nil) { self.onStart = onStart }

        var events: [String] { lines.withLock { $0 } }
        private func add(_ line: String) {
            lines.withLock { $0.append(line) }
            arrivals.continuation.yield(line)
        }

        func requestWasCreated(_ operation: HTTPRequestOperation) { add("created") }
        func requestDidStart(_ operation: HTTPRequestOperation, request: URLRequest) {
            onStart?()
            add("start \(request.url?.path ?? "")")
        }
        func request(_ operation: HTTPRequestOperation, willSend request: URLRequest, attempt: Int) {
            add("send \(attempt) \(request.url?.path ?? "") \(request.value(forHTTPHeaderField: "X-Adapted") ?? "-")")
        }
        func requestIsWaitingForConnection(_ operation: HTTPRequestOperation) { add("waiting") }
        func requestGotConnection(_ operation: HTTPRequestOperation) { add("connected \(operation.request.url?.path ?? "")") }
        func request(_ operation: HTTPRequestOperation, didReceive response: HTTPResponseHead) {
            add("head \(response.statusCode) \(operation.request.url?.path ?? "")")
        }
        func request(_ operation: HTTPRequestOperation, willRedirectTo request: URLRequest, after response: HTTPResponseHead) {
            add("redirect \(response.statusCode) \(request.url?.path ?? "")")
        }
        func request(_ operation: HTTPRequestOperation, willRetry attempt: Int, after delay: TimeInterval, because error: ConveyorError) {
            add("retry \(attempt) \(error.statusCode ?? 0)")
        }
        func request(_ operation: HTTPRequestOperation, wasAnsweredBy source: HTTPCache.ResponseSource) { add("cache \(source)") }
        func requestDidFinish(
            _ operation: HTTPRequestOperation, request: URLRequest, response: HTTPResponseHead?, error: ConveyorError?,
            metrics: OperationMetrics?
        ) {
            add("finish \(response?.statusCode ?? 0) \(error == nil ? "ok" : "error") attempts \(metrics?.attemptCount ?? 0)")
            finished.continuation.yield()
        }
    }

    @Test(
        "A redirect and a retry: created, started, each attempt as sent (after the adapters), heads, redirect, retry, finish — in order",
        arguments: HTTPClient.TransportKind.testedKinds)
    func lifeInOrder(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.routeRedirectThenRetry()
        let recorder = Recorder()
        let client = testClient(server, transport) {
            $0.retryPolicy = .attempts(2)
            $0.eventMonitors = [recorder]
            $0.requestAdapters = [
                ClosureRequestAdapter { request, context in
                    var request = request
                    request.setValue("a\(context.attempt)", forHTTPHeaderField: "X-Adapted")
                    return request
                }
            ]
        }
        _ = try await client.response(method: .get, path: "start")
        for await _ in recorder.finished.stream { break }
        #expect(
            recorder.events == [
                "created", "start /start", "send 1 /start a1", "waiting", "connected /start", "head 302 /start", "redirect 302 /flaky",
                "send 2 /flaky a2", "waiting", "connected /start", "head 503 /start", "retry 2 503", "send 3 /flaky a3", "waiting",
                "connected /start", "head 200 /start", "finish 200 ok attempts 2",  // metrics count the retry, not the redirect
            ], "\(recorder.events)")
    }

    @Test("A cache answer is reported with its source", arguments: HTTPClient.TransportKind.testedKinds)
    func cacheAnswer(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/fresh") { _ in .init(headers: ["Cache-Control": "max-age=60"], body: .data(Data("cached".utf8))) }
        let recorder = Recorder()
        let client = testClient(server, transport) {
            $0.cache = HTTPCache(memoryCapacity: 1 << 20, diskCapacity: 0, directory: nil)
            $0.eventMonitors = [recorder]
        }
        _ = try await client.response(method: .get, path: "fresh")
        _ = try await client.response(method: .get, path: "fresh")
        for await _ in recorder.finished.stream.prefix(2) {}
        #expect(recorder.events.filter { $0.hasPrefix("cache") } == ["cache cache"], "\(recorder.events)")
        #expect(server.receivedRequests.filter { $0.path == "/fresh" }.count == 1)
    }

    @Test(
        "A monitor that blocks stalls no transfer: the request completes, and the events follow in order once it returns",
        arguments: HTTPClient.TransportKind.testedKinds)
    func stuckMonitor(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/quick") { _ in .text("ok") }
        let release = DispatchSemaphore(value: 0)
        let entered = AsyncStream.makeStream(of: Void.self)
        let recorder = Recorder(onStart: {
            entered.continuation.yield()
            _ = release.wait(timeout: .now() + 60)  // not a hang: released once the request has completed
        })
        let client = testClient(server, transport) { $0.eventMonitors = [recorder] }
        async let answer = client.response(method: .get, path: "quick")
        for await _ in entered.stream { break }
        // The monitor is blocked from here on; the request completes all the same.
        let response = try await answer
        #expect(String(decoding: response.data, as: UTF8.self) == "ok")
        // The monitor is still inside `requestDidStart`: nothing after it has been delivered.
        #expect(recorder.events == ["created"])
        release.signal()
        for await _ in recorder.finished.stream { break }
        #expect(
            recorder.events == [
                "created", "start /quick", "send 1 /quick -", "waiting", "connected /quick", "head 200 /quick",
                "finish 200 ok attempts 1",
            ])
    }

    @Test(
        "Connection waits are reported: on one connection, the second request gets it only after the first was answered",
        arguments: HTTPClient.TransportKind.testedKinds)
    func connectionWait(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let first = DispatchSemaphore(value: 0)
        let entered = AsyncStream.makeStream(of: Void.self)
        server.route("/held") { _ in
            entered.continuation.yield()
            _ = first.wait(timeout: .now() + 60)  // not a hang: released by the test
            return .text("held")
        }
        server.route("/next") { _ in .text("next") }
        let waiter = Recorder()
        let client = testClient(server, transport) {
            $0.maximumConnectionsPerHost = 1
            $0.eventMonitors = [waiter]
        }
        async let held = client.response(method: .get, path: "held")
        for await _ in entered.stream { break }
        async let next = client.response(method: .get, path: "next")
        // The second one waits for the only connection until the first is answered.
        for await line in waiter.arrivals.stream where line == "waiting" { break }
        first.signal()
        _ = try await (held, next)
        for await _ in waiter.finished.stream.prefix(2) {}
        // One connection: the second request has it only once the first was answered on it.
        let events = waiter.events
        let heldAnswered = try #require(events.firstIndex(of: "head 200 /held"))
        let nextConnected = try #require(events.firstIndex(of: "connected /next"))
        #expect(nextConnected > heldAnswered, "\(events)")
    }

    @Test("The logger as a client's monitor writes the lines startLogging writes, and never both at once")
    func loggerAsMonitor() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/logged") { _ in .text("ok") }
        let lines = Lock<[String]>([])
        let logger = NetworkLogger(sink: ClosureLogSink { entry, _ in lines.withLock { $0.append(entry) } }, clock: { 0 })
        let recorder = Recorder()
        let client = testClient(server, .curl) { $0.eventMonitors = [logger, recorder] }
        // As a monitor (not started): the client's operations are logged.
        _ = try await client.response(method: .get, path: "logged")
        for await _ in recorder.finished.stream { break }
        client.flushEventMonitors()
        logger.flush()
        let monitored = lines.withLock { $0 }
        // Started as well: the notifications log, the monitor route stays quiet — no line twice.
        logger.startLogging()
        defer { logger.stopLogging() }
        lines.withLock { $0 = [] }
        _ = try await client.response(method: .get, path: "logged")
        for await _ in recorder.finished.stream { break }
        client.flushEventMonitors()
        logger.flush()
        let url = server.baseURL.appendingPathComponent("logged").absoluteString
        // Started, the logger hears every operation in the process (other suites' too): this one's lines.
        let observed = lines.withLock { $0 }.filter { $0.contains(url) }
        #expect(monitored == ["→ GET \(url)", "← 200 GET \(url) [0.000 s, 2 B]"], "\(monitored)")
        #expect(observed == monitored, "\(observed)")
    }

    @Test("MetricsLogMonitor writes one JSON line per request, its URL's secrets hidden")
    func metricsLine() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/metrics") { _ in .text("four") }
        let lines = Lock<[String]>([])
        let recorder = Recorder()
        let client = testClient(server, .curl) {
            $0.eventMonitors = [MetricsLogMonitor(sink: ClosureLogSink { entry, _ in lines.withLock { $0.append(entry) } }), recorder]
        }
        _ = try await client.response(method: .get, path: "metrics?access_token=s3cr3t-value&page=2")
        for await _ in recorder.finished.stream { break }
        client.flushEventMonitors()
        let line = try #require(lines.withLock { $0 }.first)
        #expect(!line.contains("s3cr3t-value"), "\(line)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["status"] as? Int == 200)
        #expect(object["method"] as? String == "GET")
        #expect(object["bytesReceived"] as? Int == 4)
        #expect(object["attempts"] as? Int == 1)
        #expect(object["source"] as? String == "network")
        #expect((object["url"] as? String)?.contains("page=2") == true)
        #expect(object["error"] == nil)
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

@Suite("NetworkLogger")
struct NetworkLoggerTests {
    /// Collects entries; the logger's clock is frozen so durations read `0.000 s`.
    final class Capture: Sendable {
        final class Entries: Sendable {
            let storage = Lock<[String]>([])
        }
        private let entries = Entries()
        let logger: NetworkLogger

        init(level: NetworkLogger.Level, port: Int) {
            let entries = self.entries
            logger = NetworkLogger(sink: ClosureLogSink { entry, _ in entries.storage.withLock { $0.append(entry) } }, clock: { 0 })
            logger.level = level
            // Other suites run at the same time: log only this test's server.
            logger.shouldLog = { $0.request.url?.port == port }
            logger.startLogging()
        }

        deinit { logger.stopLogging() }

        var lines: [String] {
            logger.flush()
            return entries.storage.withLock { $0 }
        }
    }

    func run(_ client: HTTPClient, _ path: String, configure: (HTTPRequestOperation) -> Void = { _ in }) async throws
        -> HTTPRequestOperation
    {
        let operation = client.operation(with: try client.request(method: .get, path: path), success: nil, failure: nil)
        configure(operation)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        _ = await probe.outcome()
        return operation
    }

    @Test("info: exact start and finish lines for success, 404, timeout and cancellation")
    func infoLines() async throws {
        try await withServer { server, client in
            let capture = Capture(level: .info, port: server.port)
            let base = "http://127.0.0.1:\(server.port)"
            server.route("/small") { _ in .text(String(repeating: "x", count: 1234)) }
            _ = try await run(client, "small")
            _ = try await run(client, "status/404")
            // 2 s, not less: the timer must not fire before the head arrives, and under a full
            // parallel run 0.2 s did (the line then had no status).
            _ = try await run(client, "fault/stall-after-headers") { $0.idleTimeout = 2 }
            let cancelled = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
            cancelled.cancel()
            let probe = CompletionProbe()
            probe.attach(to: cancelled)
            client.enqueue(cancelled)
            _ = await probe.outcome()
            #expect(
                capture.lines == [
                    "→ GET \(base)/small",
                    "← 200 GET \(base)/small [0.000 s, 1.2 kB]",
                    "→ GET \(base)/status/404",
                    "← 404 GET \(base)/status/404 [0.000 s, 0 B] Request failed: unacceptable status code 404 (Not Found) from \(base)/status/404.",
                    "→ GET \(base)/fault/stall-after-headers",
                    "← 200 GET \(base)/fault/stall-after-headers [0.000 s, 0 B] The request timed out: no data arrived for 2 s.",
                    "← ERR GET \(base)/get [0.000 s] The operation was cancelled (cancelled by the caller).",
                ])
        }
    }

    @Test("Retries are logged per attempt and the finish line counts attempts")
    func retries() async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.retryPolicy = RetryTests.quick(2)
        try await withServer(configuration: configuration) { server, client in
            let capture = Capture(level: .info, port: server.port)
            RetryTests.sequence(server, path: "/flaky", statuses: [503])
            _ = try await client.get("flaky")
            let base = "http://127.0.0.1:\(server.port)"
            #expect(capture.lines.count == 3)
            #expect(
                capture.lines[1].hasPrefix(
                    "↻ 503 GET \(base)/flaky [attempt 1, 0.000 s] retrying: Request failed: unacceptable status code 503"))
            #expect(capture.lines[2].hasPrefix("← 200 GET \(base)/flaky [0.000 s, ") && capture.lines[2].hasSuffix(", 2 attempts]"))
        }
    }

    @Test(
        "warn logs every failed operation (status, timeout, content type, transport); error only network failures",
        arguments: HTTPClient.TransportKind.testedKinds)
    func quieterLevels(transport: HTTPClient.TransportKind) async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        try await withServer(configuration: configuration) { server, client in
            let warn = Capture(level: .warn, port: server.port)
            let error = Capture(level: .error, port: server.port)
            _ = try await run(client, "get")
            _ = try await run(client, "status/500")
            // Only the stalled one has a short idle timeout: 0.2 s for every request was missed
            // by an ordinary one on a machine loaded by the parallel suites.
            _ = try await run(client, "fault/stall-after-headers") { $0.idleTimeout = 0.2 }
            _ = try await run(client, "html") { $0.acceptableContentTypes = ["application/json"] }
            _ = try await run(client, "fault/reset")
            let cancelled = client.operation(with: try client.request(method: .get, path: "delay/5"), success: nil, failure: nil)
            let probe = CompletionProbe()
            probe.attach(to: cancelled)
            client.enqueue(cancelled)
            cancelled.cancel()
            _ = await probe.outcome()
            warn.logger.flush()
            #expect(warn.lines.count == 4, "\(warn.lines)")
            #expect(
                warn.lines.count == 4 && warn.lines[0].contains("unacceptable status code 500") && warn.lines[1].contains("timed out")
                    && warn.lines[2].contains("unacceptable content type") && warn.lines[3].contains("/fault/reset"))
            #expect(error.lines.count == 1 && error.lines[0].contains("/fault/reset"))
            // A failure the app expects is demoted to info.
            warn.logger.expectedFailures = NetworkLogger.statusCodes([404])
            _ = try await run(client, "status/404")
            _ = try await run(client, "status/503")
            #expect(warn.lines.count == 5 && warn.lines[4].contains("503"))
        }
    }

    @Test("shouldLog: true logs, false hides; the host preset matches")
    func filter() async throws {
        try await withServer { server, client in
            let capture = Capture(level: .info, port: server.port)
            capture.logger.shouldLog = { $0.request.url?.port == server.port && $0.request.url?.path == "/get" }
            _ = try await run(client, "get")
            _ = try await run(client, "headers")
            #expect(capture.lines.count == 2 && capture.lines.allSatisfy { $0.contains("/get") })
            let operation = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://Example.com/x")!))
            #expect(NetworkLogger.hosts(["example.com"])(operation) && !NetworkLogger.hosts(["other.org"])(operation))
            #expect(NetworkLogger.pathPrefix("/x")(operation))
        }
    }

    @Test("debug: headers, bodies, cURL — with credentials, secret query items and body fields redacted")
    func debugRedacted() async throws {
        try await withServer { server, client in
            let capture = Capture(level: .debug, port: server.port)
            client.setAuthorizationHeader(token: "SECRET-TOKEN")
            client.setDefaultHeader("Cookie", value: "session=SECRET-COOKIE")
            _ = try await client.post("post?api_key=SECRET-KEY&page=2", parameters: ["password": "SECRET-PASSWORD", "name": "ada"])
            client.requestSerializer = .json
            _ = try await client.post("post", parameters: ["token": "SECRET-JSON", "nested": ["secret": "SECRET-NESTED", "ok": 1]])
            let text = capture.lines.joined(separator: "\n")
            #expect(!text.contains("SECRET"), "\(Excerpt.of(text, showing: ["SECRET"]))")
            #expect(text.contains("Authorization: <redacted>") && text.contains("Cookie: <redacted>"))
            #expect(text.contains("api_key=%3Credacted%3E&page=2"))
            #expect(text.contains("password=<redacted>") && text.contains("name=ada"))
            #expect(text.contains(#""token":"<redacted>""#) && text.contains(#""secret":"<redacted>""#))
            #expect(text.contains("curl -X POST") && text.contains("'Authorization: <redacted>'"))
            #expect(text.contains("Content-Type: application/json"))
        }
    }

    @Test("debug: binary bodies are summarised, long bodies truncated")
    func debugBodies() async throws {
        try await withServer { server, client in
            let capture = Capture(level: .debug, port: server.port)
            capture.logger.bodyLimit = 100
            _ = try await run(client, "image/png")
            server.route("/long") { _ in .text(String(repeating: "y", count: 5000)) }
            _ = try await run(client, "long")
            let text = capture.lines.joined(separator: "\n")
            #expect(text.contains("body: <\(SampleImages.png.count) B image/png>"))
            #expect(text.contains("body: " + String(repeating: "y", count: 100) + "… (5.0 kB in all, truncated)"))
        }
    }

    @Test("200 concurrent operations produce 400 whole lines")
    func concurrentWholeLines() async throws {
        try await withServer { server, client in
            let capture = Capture(level: .info, port: server.port)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<200 { group.addTask { _ = try await client.get("get", parameters: ["i": index]) } }
                try await group.waitForAll()
            }
            let lines = capture.lines
            #expect(lines.count == 400)
            #expect(lines.allSatisfy { ($0.hasPrefix("→ GET ") || $0.hasPrefix("← 200 GET ")) && !$0.contains("\n") })
        }
    }

    @Test("startLogging and stopLogging are idempotent")
    func startStopTwice() async throws {
        try await withServer { server, client in
            let capture = Capture(level: .info, port: server.port)
            capture.logger.startLogging()
            _ = try await client.get("get")
            #expect(capture.lines.count == 2)
            capture.logger.stopLogging()
            capture.logger.stopLogging()
            _ = try await client.get("get")
            #expect(capture.lines.count == 2)
            capture.logger.startLogging()
            capture.logger.startLogging()
            _ = try await client.get("get")
            #expect(capture.lines.count == 4)
        }
    }

    @Test("The cURL line, run with the real curl, reproduces the request")
    func curlReproduces() async throws {
        try await withServer { server, client in
            client.setDefaultHeader("X-Trace", value: "it's \"quoted\"")
            let operation = client.operation(
                with: try client.request(
                    method: .put, path: "put?x=1", parameters: ["name": "Zoë & co"],
                    requestSerializer: .json), success: nil, failure: nil)
            let command = operation.cURLDescription
            let process = try ChildProcess("/bin/sh", ["-c", command + " -s -o /dev/null"])
            await process.exited()
            #expect(process.terminationStatus == 0)
            let received = try #require(server.receivedRequests.last)
            #expect(received.method == "PUT" && received.target == "/put?x=1")
            #expect(received.headers["X-Trace"] == "it's \"quoted\"")
            #expect(received.headers["Content-Type"] == "application/json; charset=utf-8")
            #expect(try JSONSerialization.jsonObject(with: received.body) as? [String: String] == ["name": "Zoë & co"])
        }
    }

    @Test("The file sink rotates by size")
    func fileSink() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-log-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let sink = FileLogSink(url: directory.appendingPathComponent("net.log"), maximumBytes: 100, maximumFiles: 2)
        for index in 0..<10 { sink.write("line \(index) " + String(repeating: "-", count: 30), level: .info) }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(files == ["net.log", "net.log.1", "net.log.2"])
        let current = try String(contentsOf: directory.appendingPathComponent("net.log"), encoding: .utf8)
        #expect(current.hasSuffix("line 9 " + String(repeating: "-", count: 30) + "\n"))
    }

    @Test("Every built-in sink has a shorthand: .standardError, .closure { }, .file(url) — a real request logged through each")
    func sinkShorthands() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-log-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server, client in
            let lines = Lock<[String]>([])
            let closureLogger = NetworkLogger(sink: .closure { entry, _ in lines.withLock { $0.append(entry) } })
            let fileURL = directory.appendingPathComponent("net.log")
            let fileLogger = NetworkLogger(sink: .file(fileURL))
            let standardError = NetworkLogger(sink: .standardError)
            #expect(standardError.sink is StandardErrorLogSink)
            for logger in [closureLogger, fileLogger] {
                logger.shouldLog = { $0.request.url?.port == server.port }
                logger.startLogging()
            }
            defer { [closureLogger, fileLogger].forEach { $0.stopLogging() } }
            _ = try await run(client, "get")
            closureLogger.flush()
            fileLogger.flush()
            let finish = "← 200 GET http://127.0.0.1:\(server.port)/get"
            #expect(lines.withLock { $0 }.contains { $0.hasPrefix(finish) })
            #expect(try String(contentsOf: fileURL, encoding: .utf8).contains(finish))
        }
    }
}

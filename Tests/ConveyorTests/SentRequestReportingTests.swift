import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// What monitors and the logger are told was sent is what was sent: nothing for a request its
/// route refuses, and the request after the adapters — in `willSend`, the `→` line and its cURL.
@Suite("Reporting what is sent")
struct SentRequestReportingTests {
    private static let adapter = ClosureRequestAdapter { request, _ in
        var request = request
        request.setValue("req-4711", forHTTPHeaderField: "X-Request-ID")
        return request
    }

    @Test("A request refused by its route (a malformed proxy) reports no willSend", arguments: HTTPClient.TransportKind.testedKinds)
    func refusedRequestIsNotSent(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let recorder = EventMonitorTests.Recorder()
        let client = testClient(server, transport) {
            $0.proxy = .http(host: "127.0.0.1", port: 70_000)
            $0.eventMonitors = [recorder]
        }
        await #expect {
            _ = try await client.get("get")
        } throws: { error in
            guard case .routeFailed(.invalidProxy) = error as? ConveyorError else { return false }
            return true
        }
        for await _ in recorder.finished.stream { break }
        client.flushEventMonitors()
        #expect(recorder.events == ["created", "start /get", "finish 0 error attempts 1"], "\(recorder.events)")
        #expect(server.receivedRequests.isEmpty)
    }

    @Test(
        "The → line and its cURL command show what the adapters added, as a monitor and through startLogging",
        arguments: HTTPClient.TransportKind.testedKinds)
    func loggerShowsAdaptedRequest(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/adapted") { _ in .text("ok") }
        let lines = Lock<[String]>([])
        let logger = NetworkLogger(sink: ClosureLogSink { entry, _ in lines.withLock { $0.append(entry) } }, clock: { 0 })
        logger.level = .debug
        let recorder = EventMonitorTests.Recorder()
        let client = testClient(server, transport) {
            $0.eventMonitors = [logger, recorder]
            $0.requestAdapters = [Self.adapter]
        }
        let url = server.baseURL.appendingPathComponent("adapted").absoluteString
        func startLine() async throws -> String? {
            lines.withLock { $0 = [] }
            _ = try await client.response(method: .get, path: "adapted")
            for await _ in recorder.finished.stream { break }
            client.flushEventMonitors()
            logger.flush()
            return lines.withLock { $0 }.first { $0.hasPrefix("→ GET \(url)") }
        }
        #expect(server.receivedRequests.isEmpty)
        for route in ["monitor", "startLogging"] {
            if route == "startLogging" { logger.startLogging() }
            let line = try #require(try await startLine(), "\(route): no → line")
            #expect(server.receivedRequests.last?.headers["X-Request-ID"] == "req-4711")
            // Foundation spells the name X-Request-Id.
            #expect(line.lowercased().contains("\n  x-request-id: req-4711"), "\(route): \(line)")
            #expect(line.lowercased().contains("-h 'x-request-id: req-4711'"), "\(route): \(line)")
        }
        logger.stopLogging()
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// Whether a proxy carried a request is never a guess: an unreachable proxy is named as the
/// proxy (not "the server is down"), and the metrics and the `.debug` log say which way each
/// request went (curl; URLSession takes no proxy of a client's own).
@Suite("Proxy visibility: named when unreachable, shown when used or bypassed")
struct ProxyVisibilityTests {
    @Test("An unreachable proxy is routeFailed naming the proxy, still a connectivity failure the retry policy retries (curl)")
    func unreachableProxyIsNamed() async throws {
        let refused = try RefusedPort()
        let client = testClient(baseURL: URL(string: "http://origin.invalid/")!, .curl) {
            $0.proxy = .http(host: "127.0.0.1", port: refused.port)
        }
        do {
            _ = try await client.get("get")
            Issue.record("a request through a refused proxy succeeded")
        } catch let error as ConveyorError {
            guard case .routeFailed(.proxyUnreachable(let proxy, let underlying)) = error else {
                Issue.record("not an unreachable proxy: \(error)")
                return
            }
            #expect(proxy == "http://127.0.0.1:\(refused.port)" && underlying.code == .cannotConnectToHost)
            #expect(error.description.contains("proxy http://127.0.0.1:\(refused.port)"), "\(error)")
            #expect(error.connectivityFailure == .notConnected && (error.underlyingError as? URLError)?.code == .cannotConnectToHost)
        }
        // Retried like the connection failure it is.
        let recorder = EventMonitorTests.Recorder()
        let retrying = testClient(baseURL: URL(string: "http://origin.invalid/")!, .curl) {
            $0.proxy = .http(host: "127.0.0.1", port: refused.port)
            $0.retryPolicy = .attempts(2)
            $0.retryPolicy.baseDelay = 0.01
            $0.eventMonitors = [recorder]
        }
        await #expect(throws: ConveyorError.self) { try await retrying.get("get") }
        for await _ in recorder.finished.stream { break }
        retrying.flushEventMonitors()
        #expect(recorder.events.contains("retry 2 0") && recorder.events.last == "finish 0 error attempts 2", "\(recorder.events)")
    }

    @Test("TransferMetrics and the .debug line say whether a proxy carried the request: via, bypassed, direct (curl)")
    func routeIsShown() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/route") { _ in .text("ok") }
        // A forwarding proxy of its own making: it answers every request itself.
        let proxy = try FloodingSocketServer { _ in .init(head: "HTTP/1.1 200 OK", bodyLength: 2) }
        defer { proxy.stop() }
        let name = "http://127.0.0.1:\(proxy.port)"
        let lines = Lock<[String]>([])
        let logger = NetworkLogger(sink: ClosureLogSink { entry, _ in lines.withLock { $0.append(entry) } }, clock: { 0 })
        logger.level = .debug
        func route(_ baseURL: URL, _ configure: (inout HTTPClient.Configuration) -> Void) async throws -> (
            TransferMetrics.ProxyRoute?, String
        ) {
            let recorder = EventMonitorTests.Recorder()
            let client = testClient(baseURL: baseURL, .curl) {
                configure(&$0)
                $0.eventMonitors = [logger, recorder]
            }
            lines.withLock { $0 = [] }
            let response = try await client.response(method: .get, path: "route")
            for await _ in recorder.finished.stream { break }
            client.flushEventMonitors()
            logger.flush()
            return (response.metrics.transfer?.proxy, lines.withLock { $0.joined(separator: "\n") })
        }
        // Through the proxy (an origin it answers for).
        let (via, viaLog) = try await route(URL(string: "http://origin.invalid/")!) {
            $0.proxy = .http(host: "127.0.0.1", port: proxy.port)
        }
        #expect(via == .proxy(name))
        #expect(viaLog.contains("\n  proxy: via \(name)"), "\(viaLog)")
        #expect(proxy.requestHeads.first?.hasPrefix("GET http://origin.invalid/route HTTP/1.1") == true)
        // A local server under the default bypass list: direct, and said so.
        let (bypassed, bypassedLog) = try await route(server.baseURL) { $0.proxy = .http(host: "127.0.0.1", port: proxy.port) }
        #expect(bypassed == .bypassed(proxy: name))
        #expect(bypassedLog.contains("\n  proxy: direct (bypassed \(name)"), "\(bypassedLog)")
        let (direct, _) = try await route(server.baseURL) { $0.proxy = .none }
        #expect(direct == .direct)
        let (environment, environmentLog) = try await route(server.baseURL) { _ in }
        #expect(environment == .environment && !environmentLog.contains("proxy:"))
        #expect(proxy.requestHeads.count == 1 && server.requestCount(path: "/route") == 3)
    }
}

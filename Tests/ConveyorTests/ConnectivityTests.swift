import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// One classification of connectivity failures (issue 37, items 2 and 17): decided where the
/// transport's error is mapped, and asked by retry, the cache's `stale-if-error` and the outbox.
@Suite("Connectivity failures: one classification for retry, cache and outbox", .timeLimit(.notAHang))
struct ConnectivityTests {
    /// The failure of one GET on `client`.
    private func failure(of client: HTTPClient, _ path: String) async -> ConveyorError? {
        do {
            _ = try await client.get(path)
            return nil
        } catch {
            return error as? ConveyorError
        }
    }

    @Test("A refused connection is a connectivity failure the request never left for", arguments: HTTPClient.TransportKind.testedKinds)
    func refused(transport: HTTPClient.TransportKind) async throws {
        let refused = try RefusedPort()
        let client = testClient(baseURL: refused.baseURL, transport)
        let error = try #require(await failure(of: client, "anything"))
        #expect(error.isConnectivityFailure, "\(error)")
        #expect(error.connectivityFailure == .notConnected, "\(error)")
        guard case .network(let urlError) = error else {
            Issue.record("not a network error: \(error)")
            return
        }
        #expect(urlError.code == .cannotConnectToHost, "\(error)")
    }

    @Test(
        "A connect that fails with another errno (no route: the broadcast address) is not connected too, not code -1",
        arguments: HTTPClient.TransportKind.testedKinds)
    func unroutable(transport: HTTPClient.TransportKind) async throws {
        // Linux refuses a TCP connect to the broadcast address at once (ENETUNREACH); corelibs
        // maps only ECONNREFUSED and ETIMEDOUT and reports this as -1 "Failed to connect to …",
        // as it did for a server restarting under the outbox (issue 37, item 2).
        let client = testClient(baseURL: Self.unroutableURL, transport)
        let error = try #require(await failure(of: client, "anything"))
        #expect(error.connectivityFailure == .notConnected, "\(error)")
    }

    /// A URL whose connect fails at once with an `errno` other than `ECONNREFUSED`.
    static let unroutableURL = URL(string: "http://255.255.255.255:9/")!

    @Test(
        "A server that closes without a reply, or resets, is a connectivity failure; a malformed answer is not",
        arguments: HTTPClient.TransportKind.testedKinds)
    func droppedConnection(transport: HTTPClient.TransportKind) async throws {
        try await withServer { server, _ in
            let client = testClient(server, transport)
            for fault in [LocalHTTPServer.Fault.closeBeforeHeaders, .reset, .closeMidBody] {
                let error = try #require(await failure(of: client, "fault/\(fault.rawValue)"))
                #expect(error.isConnectivityFailure, "\(fault): \(error)")
                #expect(error.connectivityFailure == .connectionLost, "\(fault): \(error)")
            }
            let malformed = try #require(await failure(of: client, "fault/malformed-status-line"))
            #expect(!malformed.isConnectivityFailure, "\(malformed)")
        }
    }

    @Test("A retry policy retries a connection closed without a reply", arguments: HTTPClient.TransportKind.testedKinds)
    func retried(transport: HTTPClient.TransportKind) async throws {
        try await withServer { server, _ in
            let calls = Lock(0)
            server.route("/flaky") { _ in
                let call = calls.withLock {
                    $0 += 1
                    return $0
                }
                return call == 1 ? .init(body: .fault(.closeBeforeHeaders)) : .text("second")
            }
            let client = testClient(server, transport) {
                $0.retryPolicy = RetryPolicy(maximumAttempts: 2, baseDelay: 0.01, maximumDelay: 0.02)
            }
            let body = try await client.get("flaky")
            #expect(String(decoding: body, as: UTF8.self) == "second")
            #expect(server.requestCount(path: "/flaky") == 2)
        }
    }

    @Test(
        "stale-if-error: a connection dropped without a reply is answered with the stale stored response",
        arguments: HTTPClient.TransportKind.testedKinds)
    func staleIfErrorOnDroppedConnection(transport: HTTPClient.TransportKind) async throws {
        let configure: (inout HTTPClient.Configuration) -> Void = { configuration in
            configuration.transport = transport
            configuration.monitorsReachability = false
        }
        try await withCachingServer(configure: configure) { server, client, _ in
            let calls = Lock(0)
            server.route("/sie-drop") { _ in
                let call = calls.withLock {
                    $0 += 1
                    return $0
                }
                if call == 1 { return .text("good").with(headers: ["Cache-Control": "max-age=1, stale-if-error=600", "Age": "5"]) }
                return .init(body: .fault(.closeBeforeHeaders))
            }
            _ = try await client.response(method: .get, path: "sie-drop")
            let second = try await client.response(method: .get, path: "sie-drop")
            #expect(second.statusCode == 200 && String(decoding: second.data, as: UTF8.self) == "good" && second.source == .staleOnError)
            // libcurl (under both transports) may resend once on a fresh connection when a reused one
            // closes without a reply: 2 or 3 requests.
            #expect(server.requestCount(path: "/sie-drop") >= 2)
        }
    }

    @Test(
        "Outbox: a refused connection uses no attempt and is never final; the item goes once the server is back",
        arguments: HTTPClient.TransportKind.testedKinds)
    func outboxSurvivesRefusal(transport: HTTPClient.TransportKind) async throws {
        let refused = try RefusedPort()
        let directory = try TemporaryDirectory()
        let client = testClient(baseURL: refused.baseURL, transport)
        // One attempt only: had a refusal been final or counted, the item would be failed or dead.
        var outboxConfiguration = Outbox.Configuration.default
        outboxConfiguration.baseDelay = 0.01
        outboxConfiguration.maximumDelay = 0.05
        outboxConfiguration.maximumAttempts = 1
        let outbox = try client.outbox(directory: directory.url, configuration: outboxConfiguration)
        defer { outbox.close() }
        let id = try await outbox.send(method: .post, path: "apply", parameters: ["n": 1])
        let refusals = EventCount()
        let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidFinish, object: nil, queue: nil) { note in
            // Only this client's attempts: other suites' operations post the same notification.
            if (note.object as? HTTPRequestOperation)?.request.url?.port == refused.port { refusals.increment() }
        }
        let log = ResultLog(outbox)
        await refusals.wait(atLeast: 3)
        NotificationCenter.default.removeObserver(observer)
        #expect(log.results.isEmpty && outbox.pendingCount == 1, "\(log.results)")
        var inbox: IdempotentInbox?
        let server = try refused.takeOver { inbox = IdempotentInbox($0) }
        defer { server.stop() }
        let results = await log.first(1)
        #expect(results.map(\.id) == [id] && inbox?.order == [id.idempotencyKey], "\(results)")
    }

    @Test(
        "Outbox: a connect that fails with another errno is not final either: the item stays pending, unreported",
        arguments: HTTPClient.TransportKind.testedKinds)
    func outboxSurvivesUnroutable(transport: HTTPClient.TransportKind) async throws {
        let directory = try TemporaryDirectory()
        let client = testClient(baseURL: Self.unroutableURL, transport)
        var outboxConfiguration = Outbox.Configuration.default
        outboxConfiguration.baseDelay = 0.01
        outboxConfiguration.maximumDelay = 0.05
        outboxConfiguration.maximumAttempts = 1
        let outbox = try client.outbox(directory: directory.url, configuration: outboxConfiguration)
        defer { outbox.close() }
        _ = try await outbox.send(method: .post, path: "apply", parameters: ["n": 1])
        let refusals = EventCount()
        let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidFinish, object: nil, queue: nil) { note in
            // Only this client's attempts: other suites' operations post the same notification.
            if (note.object as? HTTPRequestOperation)?.request.url?.host == Self.unroutableURL.host { refusals.increment() }
        }
        let log = ResultLog(outbox)
        await refusals.wait(atLeast: 3)
        NotificationCenter.default.removeObserver(observer)
        #expect(log.results.isEmpty && outbox.pendingCount == 1, "\(log.results)")
        #expect(directory.names(in: "dead").isEmpty)
    }
}

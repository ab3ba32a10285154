import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// `HTTPClient.Configuration.requestAdapters` against a real server: what reaches the wire on
/// every attempt, what a throwing, slow or hanging adapter does, and where credentials may go.
/// The attempts an adapter was asked for, in order.
final class AttemptLog: Sendable {
    private let log = Lock<[Int]>([])
    func record(_ attempt: Int) { log.withLock { $0.append(attempt) } }
    var attempts: [Int] { log.withLock { $0 } }
}

@Suite("Request adapters: every attempt adapted, from the unadapted request, bounded by the operation's clocks", .timeLimit(.notAHang))
struct RequestAdapterTests {
    /// Appends (never sets) `X-Attempt` with the attempt and `X-Origin` with the origin flag:
    /// a header appended twice would show that a run started from an adapted request.
    static func appending(_ calls: AttemptLog) -> ClosureRequestAdapter {
        ClosureRequestAdapter { request, context in
            calls.record(context.attempt)
            var request = request
            request.addValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
            request.addValue(context.isCredentialOrigin ? "own" : "other", forHTTPHeaderField: "X-Origin")
            return request
        }
    }

    @Test(
        "The first request, a redirect's target and a retry are each adapted once, from the request before adaptation",
        arguments: HTTPClient.TransportKind.testedKinds)
    func everyAttempt(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.routeRedirectThenRetry()
        let calls = AttemptLog()
        let client = testClient(server, transport) {
            $0.retryPolicy = .attempts(2)
            $0.requestAdapters = [Self.appending(calls)]
        }
        let response = try await client.response(method: .get, path: "start")
        #expect(String(decoding: response.data, as: UTF8.self) == "ok")
        let sent = server.receivedRequests.filter { $0.path == "/start" || $0.path == "/flaky" }
        #expect(sent.map(\.path) == ["/start", "/flaky", "/flaky"])
        // One value each: every run started from the unadapted request.
        #expect(sent.map { $0.headers["X-Attempt"] } == ["1", "2", "3"])
        #expect(sent.allSatisfy { $0.headers["X-Origin"] == "own" })
        #expect(calls.attempts == [1, 2, 3])
    }

    @Test("Adapters run in order, each seeing the one before", arguments: HTTPClient.TransportKind.testedKinds)
    func inOrder(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/ordered") { _ in .text("ok") }
        let client = testClient(server, transport) {
            $0.requestAdapters = [
                ClosureRequestAdapter { request, _ in
                    var request = request
                    request.setValue("first", forHTTPHeaderField: "X-Trace")
                    return request
                },
                ClosureRequestAdapter { request, _ in
                    var request = request
                    request.setValue((request.value(forHTTPHeaderField: "X-Trace") ?? "none") + ",second", forHTTPHeaderField: "X-Trace")
                    return request
                },
            ]
        }
        _ = try await client.response(method: .get, path: "ordered")
        #expect(server.receivedRequests.last?.headers["X-Trace"] == "first,second")
    }

    struct Refusal: Error, Equatable {}

    @Test(
        "An adapter that throws fails the operation with requestAdaptationFailed; nothing is sent, nothing retried",
        arguments: HTTPClient.TransportKind.testedKinds)
    func throwing(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/never") { _ in .text("ok") }
        let client = testClient(server, transport) {
            $0.retryPolicy = .attempts(3)
            $0.requestAdapters = [ClosureRequestAdapter { _, _ in throw Refusal() }]
        }
        await #expect {
            _ = try await client.response(method: .get, path: "never")
        } throws: { error in
            guard case .requestAdaptationFailed(let underlying) = error as? ConveyorError else { return false }
            return underlying is Refusal
        }
        #expect(server.receivedRequests.isEmpty)
    }

    @Test(
        "A cancel while an adapter waits ends the operation as cancelled; the adapter's late answer is not sent",
        arguments: HTTPClient.TransportKind.testedKinds)
    func cancelWhileAdapting(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/slow") { _ in .text("ok") }
        let entered = AsyncStream.makeStream(of: Void.self)
        let release = AsyncStream.makeStream(of: Void.self)
        let answered = AsyncStream.makeStream(of: Void.self)
        let client = testClient(server, transport) {
            $0.requestAdapters = [
                ClosureRequestAdapter { request, _ in
                    entered.continuation.yield()
                    for await _ in release.stream { break }
                    defer { answered.continuation.yield() }
                    return request
                }
            ]
        }
        let probe = CompletionProbe()
        let operation = client.operation(with: try client.request(method: .get, path: "slow"), success: nil, failure: nil)
        probe.attach(to: operation)
        client.enqueue(operation)
        for await _ in entered.stream { break }
        operation.cancel()
        #expect(await probe.outcome().error?.isCancelled == true)
        release.continuation.yield()
        // The adapter has returned its request: had it been sent, the server would have it by the
        // time a request made after it is answered.
        for await _ in answered.stream { break }
        _ = try await testClient(server, transport).response(method: .get, path: "slow")
        #expect(server.receivedRequests.filter { $0.path == "/slow" }.count == 1)
        #expect(probe.callCount == 1)
    }

    @Test("An adapter that never returns is bounded by the operation's idle timeout", arguments: HTTPClient.TransportKind.testedKinds)
    func hangingAdapter(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/hang") { _ in .text("ok") }
        let release = AsyncStream.makeStream(of: Void.self)
        defer { release.continuation.finish() }
        let client = testClient(server, transport) {
            $0.requestAdapters = [
                ClosureRequestAdapter { request, _ in
                    for await _ in release.stream {}
                    return request
                }
            ]
        }
        var request = try client.request(method: .get, path: "hang")
        request.timeoutInterval = 0.5
        await #expect {
            _ = try await client.response(for: request, responseSerializer: DataResponseSerializer())
        } throws: { error in
            (error as? ConveyorError)?.isTimeout == true
        }
        #expect(server.receivedRequests.isEmpty)
    }

    @Test(
        "Another origin is flagged as not the client's: an adapter adding a secret can leave it out",
        arguments: HTTPClient.TransportKind.testedKinds)
    func otherOrigin(transport: HTTPClient.TransportKind) async throws {
        let own = try LocalHTTPServer.started()
        defer { own.stop() }
        let other = try LocalHTTPServer.started()
        defer { other.stop() }
        own.route("/here") { _ in .text("ok") }
        other.route("/there") { _ in .text("ok") }
        let calls = AttemptLog()
        let client = testClient(own, transport) { $0.requestAdapters = [Self.appending(calls)] }
        _ = try await client.response(method: .get, path: "here")
        _ = try await client.response(method: .get, path: other.baseURL.appendingPathComponent("there").absoluteString)
        #expect(own.receivedRequests.last?.headers["X-Origin"] == "own")
        #expect(other.receivedRequests.last?.headers["X-Origin"] == "other")
    }

    @Test(
        "Outbox deliveries are adapted at each delivery; the stored item stays unadapted", arguments: HTTPClient.TransportKind.testedKinds)
    func outboxDeliveries(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let seen = Lock(Set<String>())
        server.route("/queued") { request in
            let first = seen.withLock { $0.insert(request.headers["Idempotency-Key"] ?? "").inserted }
            return first ? .init(status: 503, headers: ["Retry-After": "0"]) : .text("ok", status: 201)
        }
        let calls = AttemptLog()
        let client = testClient(server, transport) { $0.requestAdapters = [Self.appending(calls)] }
        let directory = try TemporaryDirectory()
        let outbox = try client.outbox(directory: directory.url, configuration: OutboxTests.quick { _ in })
        let log = ResultLog(outbox)
        let id = try await outbox.send(method: .post, path: "queued", parameters: ["n": "1"])
        let results = await log.first(1)
        #expect(results.map(\.id) == [id])
        #expect(results.first?.item?.headers["X-Attempt"] == nil)
        let sent = server.receivedRequests.filter { $0.path == "/queued" }
        // Refused once, delivered again: each delivery is an operation of its own, adapted afresh.
        #expect(sent.count == 2)
        #expect(sent.map { $0.headers["X-Attempt"] } == ["1", "1"])
    }
}

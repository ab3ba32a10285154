import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// The two defects issue 52 found by reading the engine: each decision was taken twice, with
/// different inputs. Both ran inside `withKnownIssue` until the engine fixed them.
@Suite("The engine's split decisions (issue 52)")
struct EngineDefectTests {
    /// A `RedirectPolicy` handler that refuses a hop makes the 3xx the response, as documented —
    /// but the head was already treated as a redirect when it arrived: the response block never
    /// ran for it, and its body went to memory instead of the chunk block. The route is now
    /// decided once, when the head arrives, with the handler.
    @Test(
        "A refused redirect is the response: its head reaches the response block, its body the chunk block",
        arguments: HTTPClient.TransportKind.testedKinds)
    func refusedRedirectIsTheResponse(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/refuse") { _ in .init(status: 302, headers: ["Location": "/get"], body: .data(Data("moved".utf8))) }
        let client = testClient(server, transport) {
            $0.redirectPolicy = .follow(max: 5) { next, redirect in redirect.url.path == "/refuse" ? nil : next }
        }
        let operation = client.operation(with: try client.request(method: .get, path: "refuse"), success: nil, failure: nil)
        operation.acceptableStatusCodes = IndexSet(200..<400)
        let heads = Lock<[Int]>([])
        let chunks = Lock(Data())
        operation.setResponseReceivedBlock { _, head in heads.withLock { $0.append(head.statusCode) } }
        operation.setChunkReceivedBlock { _, chunk in chunks.withLock { $0.append(chunk) } }
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let outcome = await probe.outcome()
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        #expect(operation.responseHead?.statusCode == 302)
        #expect(heads.withLock { $0 } == [302])
        #expect(String(decoding: chunks.withLock { $0 }, as: UTF8.self) == "moved")
    }

    /// The route is decided when the head arrives: a `Location` that cannot be followed fails
    /// the transfer then, without waiting for a 3xx body that may never end (it waited for
    /// the body's end before, here the idle timeout). The curl transport only: corelibs
    /// URLSession reads a 3xx's whole body before it tells its delegate of the head.
    @Test("A redirect that cannot be followed fails when its head arrives, not after its body (curl)")
    func unfollowableRedirectFailsAtHead() async throws {
        let transport = HTTPClient.TransportKind.curl
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let held = DispatchSemaphore(value: 0)
        defer { held.signal() }
        server.route("/bad") { _ in
            .init(
                status: 302, headers: ["Location": "ftp://example.invalid/file"],
                body: .stream(chunked: true) { writer in
                    try writer.write(Data("moving".utf8))
                    // The body's end waits for the test's verdict.
                    _ = held.wait(timeout: .now() + 120)
                })
        }
        let client = testClient(server, transport) { $0.idleTimeout = 60 }
        let operation = client.operation(with: try client.request(method: .get, path: "bad"), success: nil, failure: nil)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let outcome = await probe.outcome()
        guard case .redirectFailed(.invalidLocation(let location, _))? = outcome.error else {
            Issue.record("expected an invalid Location, got \(String(describing: outcome.error))")
            return
        }
        #expect(location == "ftp://example.invalid/file")
    }

    /// Raising `operation.idleTimeout` above the request's `timeoutInterval` worked on curl; on
    /// URLSession the transfer still timed out at the request's value, plus a second, and the
    /// error named the operation's (the idle timeout had two homes: the request's and the
    /// operation's). The transports now take it from the operation.
    @Test(
        "An operation's idle timeout above the client's is the one that holds",
        arguments: HTTPClient.TransportKind.testedKinds)
    func operationIdleTimeoutWins(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport) { $0.idleTimeout = 1 }
        let operation = client.operation(with: try client.request(method: .get, path: "delay/3"), success: nil, failure: nil)
        operation.idleTimeout = 30
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let outcome = await probe.outcome()
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
    }

    /// The other way round: an operation's idle timeout below the request's ends the transfer
    /// at its own value, and the error names that value.
    @Test(
        "An operation's idle timeout below the client's ends the transfer and is the one the error names",
        arguments: HTTPClient.TransportKind.testedKinds)
    func operationIdleTimeoutNamed(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport) { $0.idleTimeout = 60 }
        let operation = client.operation(with: try client.request(method: .get, path: "delay/3"), success: nil, failure: nil)
        operation.idleTimeout = 1
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let outcome = await probe.outcome()
        guard case .timedOut(.idle, let after)? = outcome.error else {
            Issue.record("expected an idle timeout, got \(String(describing: outcome.error))")
            return
        }
        #expect(after == 1)
    }
}

import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// `close()` while a result handler runs (issue 58, item 8): the handler's item was left to the
/// next outbox (`pendingCount` still 1 after `close()`, the POST sent again on reopening, flagged
/// as a redelivery). Now `close()` waits for a running handler and its result counts as handed
/// over; from inside the handler it does not wait (it would wait for itself).
@Suite("Outbox: close() while a result handler runs", .timeLimit(.notAHang))
struct OutboxCloseDuringHandlerTests {
    /// Holds the outbox for a handler registered before the outbox could be captured.
    final class OutboxBox: Sendable {
        let outbox = Lock<Outbox?>(nil)
    }

    /// A client with a callback queue of its own: a handler held on the shared default one
    /// (serial on Linux) would hold every other suite's completions, and those suites' waits
    /// would hold the cooperative pool this test needs to go on.
    static func client(_ server: LocalHTTPServer, _ transport: HTTPClient.TransportKind) -> HTTPClient {
        testClient(server, transport) { $0.callbackQueue = DispatchQueue(label: "outbox-close-during-handler") }
    }

    @Test(
        "close() from another thread waits for the handler; the item is not sent again by the next outbox",
        arguments: HTTPClient.TransportKind.testedKinds)
    func closeWaitsForRunningHandler(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let handlerReturned = Lock(false)
        var id = UUID()
        do {
            let outbox = try Self.client(server, transport).outbox(directory: directory.url)
            outbox.setResultHandler { _ in
                entered.signal()
                release.wait()
                handlerReturned.withLock { $0 = true }
            }
            id = try await outbox.send(method: .post, path: "apply", body: ["n": 1], requestSerializer: .json)
            _ = try await offPool { entered.wait() }
            // close() on a thread of its own (it waits for the handler), then the handler released.
            let closing = DispatchSemaphore(value: 0)
            let closed = Task {
                try await offPool {
                    closing.signal()
                    outbox.close()
                    return (handlerReturned.withLock { $0 }, outbox.pendingCount)
                }
            }
            _ = try await offPool { closing.wait() }
            release.signal()
            let (returnedBeforeClose, countAfterClose) = try await closed.value
            #expect(returnedBeforeClose, "close() returned while the handler was still running")
            #expect(countAfterClose == 0)
        }
        #expect(directory.names(in: "items").isEmpty, "\(directory.names(in: "items"))")
        let reopened = try Self.client(server, transport).outbox(directory: directory.url)
        #expect(reopened.pendingCount == 0)
        // A second item: results come in order, so the first would have come again before it.
        let log = ResultLog(reopened)
        let second = try await reopened.send(method: .post, path: "apply", body: ["n": 2], requestSerializer: .json)
        let results = await log.first(1)
        #expect(results.map(\.id) == [second] && !results[0].isRedelivery)
        reopened.settle()
        #expect(log.results.count == 1)
        #expect(inbox.requests[id.idempotencyKey] == 1 && inbox.requests[second.idempotencyKey] == 1, "\(inbox.requests)")
        reopened.close()
    }

    @Test(
        "close() from inside the result handler returns (no deadlock) and counts that result as handed over",
        arguments: HTTPClient.TransportKind.testedKinds)
    func closeFromInsideHandler(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let box = OutboxBox()
        let done = DispatchSemaphore(value: 0)
        let countInHandler = Lock(-1)
        var id = UUID()
        do {
            let outbox = try Self.client(server, transport).outbox(directory: directory.url)
            box.outbox.withLock { $0 = outbox }
            outbox.setResultHandler { _ in
                let outbox = box.outbox.withLock { $0 }
                outbox?.close()
                countInHandler.withLock { $0 = outbox?.pendingCount ?? -1 }
                done.signal()
            }
            id = try await outbox.send(method: .post, path: "apply", body: ["n": 1], requestSerializer: .json)
            _ = try await offPool { done.wait() }
            #expect(countInHandler.withLock { $0 } == 0)
            box.outbox.withLock { $0 = nil }
            // The handler has returned (close() waits for nothing now) and no file is left.
            outbox.close()
        }
        #expect(directory.names(in: "items").isEmpty, "\(directory.names(in: "items"))")
        let reopened = try Self.client(server, transport).outbox(directory: directory.url)
        #expect(reopened.pendingCount == 0)
        let log = ResultLog(reopened)
        let second = try await reopened.send(method: .post, path: "apply", body: ["n": 2], requestSerializer: .json)
        let results = await log.first(1)
        #expect(results.map(\.id) == [second] && !results[0].isRedelivery)
        #expect(inbox.requests[id.idempotencyKey] == 1, "\(inbox.requests)")
        reopened.close()
    }
}

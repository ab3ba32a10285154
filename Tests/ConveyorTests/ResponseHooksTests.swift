import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// The delegate-style view of a transfer: a block for the response head, and the subclass hooks
/// AFNetworking users overrode (response, data, finish).
@Suite("Watching a transfer: the response block and the subclass hooks")
struct ResponseHooksTests {
    /// Records what the hooks saw, in order.
    final class RecordingOperation: HTTPRequestOperation, @unchecked Sendable {
        // @unchecked Sendable: its one added property is a Lock.
        let events = Lock<[String]>([])
        let bytes = Lock(0)

        override func didReceive(response: HTTPResponseHead) {
            events.withLock { $0.append("response \(response.statusCode) \(response.url.path)") }
        }

        override func didReceive(data: Data) {
            bytes.withLock { $0 += data.count }
            events.withLock { if $0.last != "data" { $0.append("data") } }
        }

        override func didFinish(error: ConveyorError?) {
            events.withLock { $0.append(error.map { "finish \($0.statusCode ?? 0)" } ?? "finish") }
        }
    }

    /// Cancels itself from the data hook on the first chunk and returns only once the failure
    /// block has run: the moment between a chunk's check and its progress block being queued.
    final class CancellingOperation: HTTPRequestOperation, @unchecked Sendable {
        // @unchecked Sendable: its added state is a Lock and a semaphore.
        let failureRan = DispatchSemaphore(value: 0)
        private let cancelled = Lock(false)

        override func didReceive(data: Data) {
            let first = cancelled.withLock { cancelled in
                defer { cancelled = true }
                return !cancelled
            }
            guard first else { return }
            cancel()
            _ = failureRan.wait(timeout: .now() + 60)  // only ends a hang: the failure block runs at once
        }
    }

    @Test(
        "A cancel while a chunk is handled: no progress block runs after the failure block (attack finding)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func noProgressAfterCompletion(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let operation = client.operation(CancellingOperation.self, with: try client.request(method: .get, path: "bytes/200000"))
        let probe = CompletionProbe()
        probe.attach(to: operation)
        let order = Lock<[String]>([])
        operation.setDownloadProgressBlock { _, _, _ in order.withLock { $0.append("progress") } }
        operation.setCompletionBlock(
            success: { operation, value in
                order.withLock { $0.append("success") }
                probe.success(operation, value)
            },
            failure: { operation, error in
                order.withLock { $0.append("failure") }
                (operation as? CancellingOperation)?.failureRan.signal()
                probe.failure(operation, error)
            })
        client.enqueue(operation)
        #expect(await probe.outcome().error?.isCancelled == true)
        // Blocks queued before the hook returned have run once the serial queue is flushed.
        probe.queue.sync {}
        let events = order.withLock { $0 }
        #expect(events.last == "failure", "events after the completion: \(events)")
        #expect(events.filter { $0 == "failure" || $0 == "success" }.count == 1)
    }

    @Test(
        "Hooks see the final response (not the redirect), every body byte, then one finish", arguments: HTTPClient.TransportKind.testedKinds
    )
    func hooksInOrder(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let operation = client.operation(RecordingOperation.self, with: try client.request(method: .get, path: "redirect/1"))
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
        #expect(operation.events.withLock { $0 } == ["response 200 /get", "data", "finish"])
        #expect(operation.bytes.withLock { $0 } == operation.responseData?.count)

        let failing = client.operation(RecordingOperation.self, with: try client.request(method: .get, path: "status/404"))
        let second = CompletionProbe()
        second.attach(to: failing)
        client.enqueue(failing)
        _ = await second.outcome()
        #expect(failing.events.withLock { $0 } == ["response 404 /status/404", "finish 404"])
    }

    @Test(
        "The response block runs on the callback queue with the head, before the body's progress and the success block",
        arguments: HTTPClient.TransportKind.testedKinds)
    func responseBlock(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let order = Lock<[String]>([])
        let operation = client.operation(with: try client.request(method: .get, path: "bytes/50000"), success: nil, failure: nil)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        // Each event says whether it ran on the callback queue (the probe's).
        operation.setResponseReceivedBlock { _, response in
            let onQueue = probe.isCurrent
            order.withLock { $0.append("head \(response.statusCode) \(response.expectedContentLength)\(onQueue ? "" : " off-queue")") }
        }
        operation.setDownloadProgressBlock { _, _, _ in order.withLock { if $0.last != "progress" { $0.append("progress") } } }
        operation.setCompletionBlock(
            success: { operation, value in
                let onQueue = probe.isCurrent
                order.withLock { $0.append(onQueue ? "success" : "success off-queue") }
                probe.success(operation, value)
            }, failure: probe.failure)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
        #expect(order.withLock { $0 } == ["head 200 50000", "progress", "success"])
    }
}

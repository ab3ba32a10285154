import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@Suite("HTTPRequestOperation lifecycle")
struct OperationLifecycleTests {
    @Test("A successful GET runs the success block once, on the callback queue, with the body")
    func success() async throws {
        try await withServer { server, client in
            let probe = CompletionProbe()
            let operation = client.operation(
                with: try client.request(method: .get, path: "get", parameters: ["q": "swift"]), success: nil, failure: nil)
            probe.attach(to: operation)
            client.enqueue(operation)
            let outcome = await probe.outcome()
            let echo = try #require(outcome.data).jsonObject
            #expect((echo["args"] as? [String: Any])?["q"] as? String == "swift")
            #expect(operation.state == .finished)
            #expect(operation.response?.statusCode == 200)
            #expect(operation.responseString?.contains("\"swift\"") == true)
            #expect(operation.metrics?.bytesReceived == operation.responseData?.count)
            #expect(await probe.settledCallCount == 1)
            #expect(probe.allOnQueue)
        }
    }

    @Test("Cancel before start: the failure block runs once with a cancellation error and nothing is sent")
    func cancelBeforeStart() async throws {
        try await withServer { server, client in
            let probe = CompletionProbe()
            let operation = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
            probe.attach(to: operation)
            operation.cancel()
            client.enqueue(operation)
            #expect(await probe.outcome().error?.isCancelled == true)
            operation.cancel()
            #expect(await probe.settledCallCount == 1)
            #expect(server.requestCount(path: "/get") == 0)
        }
    }

    @Test("Cancel during the transfer finishes before the server answers, with a cancellation error, once")
    func cancelDuring() async throws {
        try await withServer { server, client in
            let held = HeldRoute(server, body: "too late")
            defer { held.release() }
            let probe = CompletionProbe()
            let answeredWhenFinished = Lock<Int?>(nil)
            let operation = client.get(
                "hold", success: probe.success,
                failure: { operation, error in
                    answeredWhenFinished.withLock { $0 = held.answeredCount }
                    probe.failure(operation, error)
                })
            await held.arrived()
            operation.cancel()
            #expect(await probe.outcome().error?.isCancelled == true)
            // "At once" as an order of events, not a stopwatch: the failure block ran while the
            // server still held the answer (released only by the defer above, or its 60 s fallback).
            #expect(answeredWhenFinished.withLock { $0 } == 0)
            operation.cancel()
            #expect(await probe.settledCallCount == 1)
            #expect(operation.isFinished && operation.isCancelled)
        }
    }

    @Test("Cancel after finish changes nothing")
    func cancelAfterFinish() async throws {
        try await withServer { _, client in
            let probe = CompletionProbe()
            let operation = client.get("get", success: probe.success, failure: probe.failure)
            #expect(await probe.outcome().data != nil)
            operation.cancel()
            #expect(await probe.settledCallCount == 1)
            #expect(operation.error == nil)
            #expect(!operation.isCancelled)
        }
    }

    @Test("The queue learns the operation finished: waitUntilAllOperationsAreFinished returns")
    func queueSeesFinish() async throws {
        try await withServer { _, client in
            let counter = Counter()
            for index in 0..<20 {
                client.get(
                    "get", parameters: ["i": index], success: { _, _ in counter.increment() }, failure: { _, _ in counter.increment() })
            }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    client.operationQueue.waitUntilAllOperationsAreFinished()
                    continuation.resume()
                }
            }
            #expect(client.operationQueue.operationCount == 0)
            // Off the cooperative pool: the callback queue is shared by every client of the run.
            try await offPool { client.configuration.callbackQueue.sync {} }
            #expect(counter.count == 20)
        }
    }

    @Test("Start and finish notifications are posted with the operation as object")
    func notifications() async throws {
        try await withServer { _, client in
            let probe = CompletionProbe()
            let operation = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
            probe.attach(to: operation)
            let seen = Counter()
            let names: [Notification.Name] = [.conveyorOperationDidStart, .conveyorOperationDidFinish]
            let observers = names.map { name in
                NotificationCenter.default.addObserver(forName: name, object: operation, queue: nil) { _ in seen.increment() }
            }
            defer { observers.forEach(NotificationCenter.default.removeObserver) }
            client.enqueue(operation)
            _ = await probe.outcome()
            #expect(seen.count == 2)
        }
    }

    @Test("A status outside acceptableStatusCodes fails with the status, response and body")
    func unacceptableStatus() async throws {
        try await withServer { server, client in
            server.route("/teapot") { _ in .text("short and stout", status: 418) }
            let probe = CompletionProbe()
            client.get("teapot", success: probe.success, failure: probe.failure)
            let error = try #require(await probe.outcome().error)
            guard case .unacceptableStatusCode(let code, let response, let data) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(code == 418 && response.statusCode == 418)
            #expect(data == Data("short and stout".utf8))
            #expect(error.description.contains("418") && error.description.contains("short and stout"))
        }
    }

    @Test("acceptableStatusCodes and acceptableContentTypes are per instance")
    func perInstanceValidation() async throws {
        try await withServer { _, client in
            let accepting = CompletionProbe()
            let teapot = client.operation(with: try client.request(method: .get, path: "status/418"), success: nil, failure: nil)
            teapot.acceptableStatusCodes = IndexSet(integer: 418)
            accepting.attach(to: teapot)
            client.enqueue(teapot)
            #expect(await accepting.outcome().data != nil)

            let rejecting = CompletionProbe()
            let html = client.operation(with: try client.request(method: .get, path: "html"), success: nil, failure: nil)
            html.acceptableContentTypes = ["application/json"]
            rejecting.attach(to: html)
            client.enqueue(html)
            let error = try #require(await rejecting.outcome().error)
            guard case .unacceptableContentType(let type, let acceptable, _, let data) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(type == "text/html" && acceptable == ["application/json"])
            #expect(data.map { String(decoding: $0, as: UTF8.self) }?.contains("<html>") == true)
            #expect(error.description.contains("text/html") && error.description.contains("<!DOCTYPE html>"))
        }
    }

    @Test("An unresolvable path still returns an operation, which fails with invalidURL and sends nothing")
    func invalidPathThroughVerb() async throws {
        try await withServer { server, client in
            let probe = CompletionProbe()
            let operation = client.get("mailto:nobody@example.com", success: probe.success, failure: probe.failure)
            guard case .invalidURL = await probe.outcome().error else {
                Issue.record("expected invalidURL")
                return
            }
            #expect(operation.isFinished)
            #expect(server.receivedRequests.isEmpty)
        }
    }

    @Test("Completion blocks run on the configured callback queue")
    func callbackQueue() async throws {
        let queue = DispatchQueue(label: "test.custom-callbacks")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        var configuration = HTTPClient.Configuration.default
        configuration.callbackQueue = queue
        try await withServer(configuration: configuration) { _, client in
            let value = await withCheckedContinuation { continuation in
                client.get(
                    "get", success: { _, _ in continuation.resume(returning: DispatchQueue.getSpecific(key: key)) },
                    failure: { _, _ in continuation.resume(returning: nil) })
            }
            #expect(value == 7)
        }
    }
}

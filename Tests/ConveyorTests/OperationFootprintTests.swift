import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

@Suite("What a waiting operation holds")
struct OperationFootprintTests {
    @Test("An operation waiting in a suspended queue has no run state, reading it makes none, and it gets one when it runs")
    func runStateMadeWhenStarted() async throws {
        try await withServer { server, client in
            client.operationQueue.isSuspended = true
            let probe = CompletionProbe()
            let operation = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
            probe.attach(to: operation)
            client.enqueue(operation)
            // What callers read of a waiting operation has its default without a run state.
            #expect(operation.response == nil)
            #expect(operation.responseData == nil)
            #expect(operation.metrics == nil)
            #expect(operation.state == .ready)
            #expect(!operation.mutableState.withLock { $0.transfer.hasRecord })
            client.operationQueue.isSuspended = false
            let outcome = await probe.outcome()
            #expect(try #require(outcome.data).jsonObject["url"] as? String == server.baseURL.appendingPathComponent("get").absoluteString)
            #expect(operation.mutableState.withLock { $0.transfer.hasRecord })
            #expect(operation.response?.statusCode == 200)
        }
    }
}

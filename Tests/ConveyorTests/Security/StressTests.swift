import Conveyor
import ConveyorTesting
import Foundation
import Synchronization
import Testing

/// The thread-safety proof `.ci/run` also runs under `--sanitize=thread` and `--sanitize=address`.
@Suite("Stress: one client under concurrent enqueue, cancel, pause, resume and reconfiguration")
struct StressTests {
    /// Operations in the run: 400 inside `swift test` (beside every other test, whose timings a
    /// heavier run would disturb on two cores);
    /// `.ci/run` runs it alone with `CONVEYOR_STRESS_OPERATIONS=10000` under both sanitizers.
    static let total = Int(ProcessInfo.processInfo.environment["CONVEYOR_STRESS_OPERATIONS"] ?? "") ?? 400
    static let threads = 16

    @Test("16 threads, thousands of operations: every completion runs exactly once and nothing is left running")
    func stress() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/s") { request in .text(request.query ?? "") }
        var configuration = HTTPClient.Configuration.default
        configuration.maximumConcurrentOperations = 16
        configuration.cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0)
        configuration.callbackQueue = DispatchQueue(label: "test.stress-callbacks", attributes: .concurrent)
        let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
        let completions = Counter()
        // The finish notification (which waitUntilAllOperationsAreFinished watches) is posted
        // just before the completion block is dispatched: wait for the blocks themselves.
        let blocks = DispatchGroup()
        let perThread = Self.total / Self.threads
        // The workers block their threads, so they run on threads of their own, not the pool.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                DispatchQueue.concurrentPerform(iterations: Self.threads) { worker in
                    for index in 0..<perThread {
                        blocks.enter()
                        let operation = client.get(
                            "s", parameters: ["w": worker, "i": index],
                            success: { _, _ in
                                completions.increment()
                                blocks.leave()
                            },
                            failure: { _, _ in
                                completions.increment()
                                blocks.leave()
                            })
                        switch index % 8 {
                        case 0: operation.cancel()
                        case 1:
                            operation.pause()
                            operation.resume()
                        case 2: client.setDefaultHeader("X-Worker-\(worker)", value: "\(index)")
                        case 3: _ = client.reachabilityStatus
                        case 4:
                            operation.pause()
                            operation.cancel()
                        case 5: _ = (operation.isFinished, operation.state, operation.responseData, client.defaultHeaders)
                        case 6: client.setDefaultHeader("X-Worker-\(worker)", value: nil)
                        default: break
                        }
                    }
                }
                continuation.resume()
            }
        }
        #expect(await client.waitUntilAllOperationsAreFinished(timeout: 300))
        let allBlocksRan = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            DispatchQueue.global().async { continuation.resume(returning: blocks.wait(timeout: .now() + 60) == .success) }
        }
        #expect(allBlocksRan)
        configuration.callbackQueue.sync(flags: .barrier) {}  // a second call of a block would have run by now
        #expect(completions.count == perThread * Self.threads)
        #expect(client.operationQueue.operationCount == 0)
    }
}

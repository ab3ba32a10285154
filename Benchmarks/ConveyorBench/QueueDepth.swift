import Conveyor
import ConveyorTestSupport
import Foundation
import Synchronization

/// Scale: GETs enqueued all at once through one curl client (16 operations at a time) — the
/// time per request and per enqueue, which must stay flat as the queue grows — and what each
/// waiting operation and each pending async call holds in memory (child processes, queue
/// suspended, RSS before and after).
enum QueueDepth {
    struct Result: Codable {
        let operations: Int
        let callbackEnqueueMicroseconds: Double
        let callbackMicrosecondsPerRequest: Double
        let asyncEnqueueMicroseconds: Double
        let asyncMicrosecondsPerRequest: Double
        let kilobytesPerQueuedOperation: Double
        let kilobytesPerPendingAsyncCall: Double
    }

    static func measure(baseURL: URL, operations: Int) async throws -> Result {
        let client = Self.client(baseURL)
        _ = try await client.get("small.json")
        // Callback API: every operation enqueued from this thread, then all of them awaited.
        let done = OutboxBench.Counter()
        let start = ContinuousClock.now
        let callbackEnqueued: Duration = await withCheckedContinuation { continuation in
            let enqueued = Mutex<Duration?>(nil)
            let finish: @Sendable () -> Void = {
                if done.increment() == operations { continuation.resume(returning: enqueued.withLock { $0 } ?? .zero) }
            }
            for _ in 0..<operations {
                client.get("small.json", success: { _, _ in finish() }, failure: { _, _ in finish() })
            }
            enqueued.withLock { $0 = ContinuousClock.now - start }
        }
        let callbackTotal = ContinuousClock.now - start
        // Async API: one child task per call.
        let asyncStart = ContinuousClock.now
        var asyncEnqueued = Duration.zero
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<operations { group.addTask { _ = try await client.get("small.json") } }
            asyncEnqueued = ContinuousClock.now - asyncStart
            try await group.waitForAll()
        }
        let asyncTotal = ContinuousClock.now - asyncStart
        let memoryCount = min(operations, 100_000)
        let callbackMemory = Double(try ChildProcess.run(["--child-queue-memory", "callback", baseURL.absoluteString, "\(memoryCount)"]))
        let asyncMemory = Double(try ChildProcess.run(["--child-queue-memory", "async", baseURL.absoluteString, "\(memoryCount)"]))
        func micro(_ duration: Duration, _ count: Int) -> Double {
            (Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) * 1e6 / Double(count)
        }
        return Result(
            operations: operations, callbackEnqueueMicroseconds: micro(callbackEnqueued, operations),
            callbackMicrosecondsPerRequest: micro(callbackTotal, operations), asyncEnqueueMicroseconds: micro(asyncEnqueued, operations),
            asyncMicrosecondsPerRequest: micro(asyncTotal, operations), kilobytesPerQueuedOperation: callbackMemory ?? -1,
            kilobytesPerPendingAsyncCall: asyncMemory ?? -1)
    }

    static func client(_ baseURL: URL) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = .curl
        configuration.cache = nil
        configuration.monitorsReachability = false
        configuration.maximumConcurrentOperations = 16
        return HTTPClient(baseURL: baseURL, configuration: configuration)
    }

    /// In the child: `count` GETs waiting in a suspended queue; prints the RSS growth per waiting request in kB.
    static func runMemoryChild(kind: String, baseURL: URL, count: Int) async throws {
        let client = Self.client(baseURL)
        _ = try await client.get("small.json")
        client.operationQueue.isSuspended = true
        let before = RequestMemory.residentKilobytes()
        var tasks: [Task<Void, Never>] = []
        if kind == "async" {
            tasks.reserveCapacity(count)
            for _ in 0..<count { tasks.append(Task { _ = try? await client.get("small.json") }) }
        } else if kind == "async-request" {
            tasks.reserveCapacity(count)
            for _ in 0..<count {
                tasks.append(
                    Task {
                        guard let request = try? client.request(method: .get, path: "small.json") else { return }
                        _ = try? await client.response(for: request, responseSerializer: DataResponseSerializer())
                    })
            }
        } else if kind == "async-response" {
            // The lowest async layer alone: one shared request, no path resolution or verb.
            let request = try client.request(method: .get, path: "small.json")
            tasks.reserveCapacity(count)
            for _ in 0..<count {
                tasks.append(Task { _ = try? await client.response(for: request, responseSerializer: DataResponseSerializer()) })
            }
        } else {
            for _ in 0..<count { client.get("small.json", success: nil, failure: nil) }
        }
        // The child only measures: polling until every call reached the queue is fine here.
        while client.operationQueue.operationCount < count { try await Task.sleep(nanoseconds: 10_000_000) }
        let after = RequestMemory.residentKilobytes()
        print((after - before) / Double(count))
        exit(0)
    }
}

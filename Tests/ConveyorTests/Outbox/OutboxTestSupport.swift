import ConveyorLocking
import ConveyorTesting
import Foundation

@testable import Conveyor

/// Collects an outbox's results through its handler; tests await a number of them.
final class ResultLog: Sendable {
    private struct State {
        var results: [Outbox.ItemResult] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<[Outbox.ItemResult], Never>)] = []
    }
    private let state = Lock(State())

    /// Registers the handler on `outbox` (which starts its delivery).
    init(_ outbox: Outbox) {
        outbox.setResultHandler { [self] result in record(result) }
    }

    private func record(_ result: Outbox.ItemResult) {
        let ready = state.withLock { state -> [(CheckedContinuation<[Outbox.ItemResult], Never>, [Outbox.ItemResult])] in
            state.results.append(result)
            let results = state.results
            let ready = state.waiters.filter { $0.count <= results.count }
            state.waiters.removeAll { $0.count <= results.count }
            return ready.map { ($0.continuation, results) }
        }
        for (continuation, results) in ready { continuation.resume(returning: results) }
    }

    /// The first `count` results, once they have arrived (the suite's time limit bounds the wait).
    func first(_ count: Int) async -> [Outbox.ItemResult] {
        let all = await withCheckedContinuation { continuation in
            let now = state.withLock { state -> [Outbox.ItemResult]? in
                if state.results.count >= count { return state.results }
                state.waiters.append((count, continuation))
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
        return Array(all.prefix(count))
    }

    /// Every result so far.
    var results: [Outbox.ItemResult] { state.withLock { $0.results } }
}

/// A fresh directory for an outbox, removed when the value goes.
///
/// On a memory file system (`/dev/shm`) where there is one: `send` syncs to disk, and an `fsync`
/// right after a build has written gigabytes waited seconds for the disk's cache flush — on a
/// thread of the cooperative pool the parallel suites share (CI saw a Server-Sent Events
/// reconnection and a cancellation miss their deadlines by seconds). What these tests check —
/// files, orders, a process killed with SIGKILL — does not need the flush; its cost is measured
/// by `conveyor-bench` instead.
final class TemporaryDirectory: Sendable {
    let url: URL

    /// The base for outbox directories in tests (also for the example and crash-test children).
    static let base: URL = {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory), isDirectory.boolValue,
            FileManager.default.isWritableFile(atPath: "/dev/shm")
        {
            return URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        }
        return FileManager.default.temporaryDirectory
    }()

    init() throws {
        url = Self.base.appendingPathComponent("conveyor-outbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// The names in a subdirectory, sorted (none when it does not exist).
    func names(in subdirectory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.appendingPathComponent(subdirectory).path)) ?? []).sorted()
    }
}

/// A route that applies each `Idempotency-Key` once, as a server honouring the IETF draft
/// does: a repeated key gets the first answer again and changes nothing.
final class IdempotentInbox: Sendable {
    private struct State {
        var effects: [String: Int] = [:]
        var requests: [String: Int] = [:]
        var bodies: [String: Data] = [:]
        var order: [String] = []
    }
    private let state = Lock(State())

    /// Installs the route at `path` on `server`; it answers 201 with `{"key": …}`.
    init(_ server: LocalHTTPServer, path: String = "/apply") {
        server.route(path) { [self] request in
            guard let key = request.headers["Idempotency-Key"] else { return .init(status: 400) }
            state.withLock { state in
                state.requests[key, default: 0] += 1
                if state.effects[key] == nil {
                    state.effects[key] = 1
                    state.bodies[key] = request.body
                    state.order.append(key)
                }
            }
            return .json(["key": key], status: 201)
        }
    }

    /// How often each key's effect was applied (1 for every key a server honouring them saw).
    var effects: [String: Int] { state.withLock { $0.effects } }
    /// How many requests arrived with each key, duplicates included: what "delivered once" is
    /// checked on (`effects` is 1 per key by construction).
    var requests: [String: Int] { state.withLock { $0.requests } }
    /// Keys in the order their effect was applied.
    var order: [String] { state.withLock { $0.order } }
    /// The body applied for a key.
    func body(for key: String) -> Data? { state.withLock { $0.bodies[key] } }
}

extension UUID {
    /// The `Idempotency-Key` an outbox sends for an item with this identifier.
    var idempotencyKey: String { "\"\(uuidString.lowercased())\"" }
}

/// Counts events and lets a test wait for a number of them.
final class EventCount: Sendable {
    private let state = Lock<(count: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, []))

    /// Records one event.
    func increment() {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count += 1
            let count = state.count
            defer { state.waiters.removeAll { $0.0 <= count } }
            return state.waiters.filter { $0.0 <= count }.map(\.1)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once `count` events were recorded.
    func wait(atLeast count: Int) async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }
}

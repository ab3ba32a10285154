import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(Glibc)
    import Glibc
#endif

/// What the independent attack on the outbox found after issue 37's fixes: each failed before
/// its fix.
@Suite("Outbox: findings of the independent attack", .timeLimit(.notAHang))
struct OutboxAttackTests {
    @Test("A valid item planted at the top of the sequence range is delivered, and once the line is empty new sends work again")
    func sequenceRangeUsedUp() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let ids = try OutboxHardeningTests.writeItems(1, server, in: directory.url)
        // The item's files renamed to the highest sequence a name may carry: a record the outbox
        // accepts, after which no next number exists.
        let items = directory.url.appendingPathComponent("items")
        let top = String(OutboxItemName.maximumSequence, radix: 16)
        let padded = String(repeating: "0", count: 16 - top.count) + top
        for name in directory.names(in: "items") {
            let renamed = padded + name.dropFirst(16)
            try FileManager.default.moveItem(at: items.appendingPathComponent(name), to: items.appendingPathComponent(renamed))
        }

        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: OutboxTests.quick())
        defer { outbox.close() }
        let log = ResultLog(outbox)
        #expect(await log.first(1).first?.id == ids[0])
        outbox.settle()
        // The line is empty: numbering starts again instead of refusing every send for ever.
        let next = try await outbox.send(method: .post, path: "apply", parameters: ["n": 2])
        #expect(await log.first(2).last?.id == next)
        #expect(inbox.order == [ids[0].idempotencyKey, next.idempotencyKey])
    }

    @Test("NaN, infinite and negative delays and limits in the configuration neither trap nor hang: they are clamped")
    func absurdConfiguration() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let requests = Lock(0)
        server.route("/flaky") { _ in
            let count = requests.withLock { count in
                count += 1
                return count
            }
            // The first answer is retried after Retry-After, capped by the NaN maximum.
            return count == 1 ? .init(status: 503, headers: ["Retry-After": "0"]) : .init(status: 201)
        }
        let directory = try TemporaryDirectory()
        var configuration = Outbox.Configuration.default
        configuration.baseDelay = .nan
        configuration.maximumDelay = -.infinity
        configuration.maximumRetryAfter = .nan
        configuration.maximumAge = .nan
        configuration.maximumConcurrentDeliveries = -3
        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: configuration)
        defer { outbox.close() }
        #expect(outbox.configuration.baseDelay == Outbox.Configuration.default.baseDelay)
        #expect(outbox.configuration.maximumDelay == 0)
        #expect(outbox.configuration.maximumRetryAfter == Outbox.Configuration.default.maximumRetryAfter)
        #expect(outbox.configuration.maximumAge == Outbox.Configuration.default.maximumAge)
        #expect(outbox.configuration.maximumConcurrentDeliveries == 1)
        let log = ResultLog(outbox)
        let id = try await outbox.send(method: .post, path: "flaky", parameters: ["n": 1])
        let result = try #require(await log.first(1).first)
        #expect(result.id == id)
        if case .succeeded = result.outcome {} else { Issue.record("expected success after one retry, got \(result.outcome)") }
        #expect(requests.withLock { $0 } == 2)
    }

    @Test("The missing parents the outbox creates for a nested directory are 0700 under umask 0, like its own")
    func createdParentsRestricted() throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let base = try TemporaryDirectory()
        let nested = base.url.appendingPathComponent("a/b/outbox", isDirectory: true)
        // The widest umask (process-wide, restored at the end, as in the file-mode test).
        let previousMask = umask(0)
        defer { umask(previousMask) }
        let outbox = try testClient(server, .curl).outbox(directory: nested)
        outbox.close()
        for path in ["a", "a/b", "a/b/outbox", "a/b/outbox/items"] {
            let mode = OutboxHardeningTests.mode(base.url.appendingPathComponent(path))
            #expect(mode == 0o700, "\(path): \(String(mode, radix: 8))")
        }
    }
}

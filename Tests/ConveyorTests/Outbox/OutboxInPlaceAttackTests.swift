import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(Glibc)
    import Glibc
#endif

/// What the independent attack on records written in place (round 4, issue 39) found: each
/// failed before its fix. Its SIGKILL campaigns (about 47,000 returned identifiers, a full disk, a
/// read-only `items/`, `close()` racing sends) found nothing; these are a documented text and
/// three directories edited by hand.
@Suite("Outbox: findings of the attack on records written in place", .timeLimit(.notAHang))
struct OutboxInPlaceAttackTests {
    /// A server with an idempotent inbox and a directory holding three items, the outbox closed:
    /// what each test edits by hand before opening the directory again.
    struct ThreeItems {
        let server: LocalHTTPServer
        let inbox: IdempotentInbox
        let directory: TemporaryDirectory
        let ids: [UUID]

        init() throws {
            server = try LocalHTTPServer.started()
            inbox = IdempotentInbox(server)
            directory = try TemporaryDirectory()
            ids = try OutboxHardeningTests.writeItems(3, server, in: directory.url)
        }

        var items: URL { directory.url.appendingPathComponent("items") }

        /// The file name of the second item's record.
        func secondRecord() throws -> String {
            try #require(directory.names(in: "items").first { $0.contains(ids[1].uuidString.lowercased()) && $0.hasSuffix(".item") })
        }

        /// An outbox on the directory again, quick to retry.
        func reopen() throws -> Outbox {
            try testClient(server, .curl).outbox(directory: directory.url, configuration: OutboxTests.quick())
        }
    }

    @Test("A sparse 64 MiB file under an item's name is set aside unread (it could claim gigabytes); the items around it go")
    func hugeSparseRecord() async throws {
        let planted = try ThreeItems()
        defer { planted.server.stop() }
        let ids = planted.ids
        let second = planted.items.appendingPathComponent(try planted.secondRecord())
        // Sparse: no disk taken; before, the whole length was read into memory (a 4 GiB one
        // crashed the process at every open under a memory limit, and the line never moved).
        let fd = open(second.path, O_WRONLY | O_TRUNC)
        #expect(fd >= 0 && ftruncate(fd, 64 << 20) == 0)
        close(fd)

        let outbox = try planted.reopen()
        defer { outbox.close() }
        let results = await ResultLog(outbox).first(3)
        #expect(results.map(\.id) == ids)
        guard case .failed(.outboxFailed(.corruptItem(_, let detail))) = results[1].outcome else {
            return #expect(Bool(false), "\(results[1].outcome)")
        }
        #expect(detail.contains("more than the \(OutboxStoredItem.maximumFileSize) bytes"), "\(detail)")
        #expect(planted.inbox.order == [ids[0].idempotencyKey, ids[2].idempotencyKey])
    }

    @Test("A record beside its own .reported copy: delivered once, its result flagged, the copy set aside, the line goes on")
    func recordBesideReportedCopy() async throws {
        let planted = try ThreeItems()
        defer { planted.server.stop() }
        let (ids, items, directory, inbox) = (planted.ids, planted.items, planted.directory, planted.inbox)
        let second = try planted.secondRecord()
        try FileManager.default.copyItem(
            at: items.appendingPathComponent(second),
            to: items.appendingPathComponent(second.replacingOccurrences(of: ".item", with: ".reported")))

        let outbox = try planted.reopen()
        defer { outbox.close() }
        #expect(outbox.pendingCount == 3)
        let results = await ResultLog(outbox).first(3)
        #expect(results.map(\.id) == ids && results.map(\.isRedelivery) == [false, true, false])
        outbox.settle()
        // Before: the second item was sent twice and the third never (the count stayed at 2).
        #expect(inbox.requests == Dictionary(uniqueKeysWithValues: ids.map { ($0.idempotencyKey, 1) }))
        #expect(outbox.pendingCount == 0 && directory.names(in: "items").isEmpty)
        #expect(directory.names(in: "corrupt") == [second])
    }

    @Test("One identifier under two sequence numbers: sent once, one result, the later copy set aside")
    func oneIdentifierTwice() async throws {
        let planted = try ThreeItems()
        defer { planted.server.stop() }
        let (ids, items, directory, inbox) = (planted.ids, planted.items, planted.directory, planted.inbox)
        let second = try planted.secondRecord()
        let copy = "00000000000000fe" + second.dropFirst(16)
        try FileManager.default.copyItem(at: items.appendingPathComponent(second), to: items.appendingPathComponent(copy))

        let outbox = try planted.reopen()
        defer { outbox.close() }
        let log = ResultLog(outbox)
        let results = await log.first(3)
        #expect(results.map(\.id) == ids)
        outbox.settle()
        // Before: two requests with the key and two unflagged results.
        #expect(inbox.requests == Dictionary(uniqueKeysWithValues: ids.map { ($0.idempotencyKey, 1) }))
        #expect(outbox.pendingCount == 0 && directory.names(in: "items").isEmpty)
        #expect(directory.names(in: "corrupt") == [copy])
        // A send after it is numbered past the copy's sequence, as before.
        let next = try await outbox.send(method: .post, path: "apply", parameters: ["n": 3])
        #expect(await log.first(4).last?.id == next)
    }

    @Test("A send whose record would pass the 4 MiB a record may hold is refused with EFBIG, nothing written")
    func recordTooLarge() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(directory: directory.url)
        defer { outbox.close() }
        let headers = HTTPHeaders(["X-Huge": String(repeating: "h", count: Int(OutboxStoredItem.maximumFileSize))])
        #expect {
            try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["n": 1], headers: headers)
        } throws: { error in
            guard case ConveyorError.outboxFailed(.writeFailed(_, let posix as POSIXError)) = error else { return false }
            return posix.code == .EFBIG
        }
        #expect(outbox.pendingCount == 0 && directory.names(in: "items").isEmpty)
    }
}

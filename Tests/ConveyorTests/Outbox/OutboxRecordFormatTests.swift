import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

@Suite("Outbox records written in place: the end mark tells a finished record from a cut one", .timeLimit(.notAHang))
struct OutboxRecordFormatTests {
    static let name = OutboxItemName(sequence: 7, id: UUID())

    static func stored(body: Data?) -> OutboxStoredItem {
        let record = OutboxRecord(
            id: name.id, idempotencyKey: name.id.idempotencyKey, createdAt: Date(timeIntervalSince1970: 1_800_000_000), method: "POST",
            url: "http://127.0.0.1:9/apply", headers: [["Content-Type", "application/json"]], bodyLength: body.map { Int64($0.count) },
            bodyInline: body != nil, attempts: 0)
        return OutboxStoredItem(record: record, inlineBody: body)
    }

    /// The record file as Conveyor 0.3.0 wrote it (version 1, no end mark), renamed into place whole.
    static func unmarkedFile(body: Data) throws -> Data {
        var record = stored(body: body).record
        record.version = OutboxRecord.unmarkedVersion
        var data = try record.encoded()
        data.append(0x0A)
        data.append(body)
        return data
    }

    static func detail(_ data: Data) -> String? {
        do {
            _ = try OutboxStoredItem.decode(data, expected: name)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("CRC-32 gives the standard check value")
    func checkValue() {
        #expect(CRC32.checksum(Data("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(Data()) == 0)
    }

    @Test("A record reads back whole, with an inline body and without, and ends with its mark", arguments: [nil, Data("{\"n\":1}\n".utf8)])
    func roundTrip(body: Data?) throws {
        let data = try Self.stored(body: body).encoded()
        let decoded = try OutboxStoredItem.decode(data, expected: Self.name)
        #expect(decoded.inlineBody == body && decoded.record.version == OutboxRecord.currentVersion)
        #expect(String(decoding: data.suffix(30), as: UTF8.self).hasPrefix("\nconveyor-outbox-end "))
    }

    @Test("Every prefix of a record — what a crash during send can leave — is refused as unfinished, never read as a record")
    func everyPrefix() throws {
        // The body holds a forged end mark: a prefix that ends with it must still fail (its checksum).
        let body = Data(("x\nconveyor-outbox-end 00000000\n" + String(repeating: "y", count: 300)).utf8)
        let data = try Self.stored(body: body).encoded()
        var unfinished = 0
        for length in 0..<data.count {
            let detail = try #require(Self.detail(data.prefix(length)), "a prefix of \(length) bytes was read as a record")
            if detail.contains("unfinished") { unfinished += 1 }
        }
        #expect(unfinished >= data.count - 1, "\(unfinished) of \(data.count)")
    }

    @Test("A changed byte anywhere, or blocks a power cut left unwritten (zeros), fail the check")
    func damaged() throws {
        let data = try Self.stored(body: Data(repeating: 0x41, count: 5000)).encoded()
        for offset in stride(from: 0, to: data.count, by: 97) {
            var changed = data
            changed[offset] ^= 0x20
            #expect(Self.detail(changed) != nil, "a change at \(offset) was not noticed")
        }
        var zeroed = data
        zeroed.replaceSubrange(4096..<data.count, with: Data(count: data.count - 4096))
        #expect(Self.detail(zeroed)?.contains("unfinished") == true)
        #expect(Self.detail(Data(count: data.count))?.contains("unfinished") == true)
    }

    @Test("A record Conveyor 0.3.0 wrote (version 1, no end mark) is still read; a marked one of version 1 is not")
    func unmarkedRecord() throws {
        let body = Data("{\"n\":3}".utf8)
        let decoded = try OutboxStoredItem.decode(try Self.unmarkedFile(body: body), expected: Self.name)
        #expect(decoded.inlineBody == body && decoded.record.version == OutboxRecord.unmarkedVersion)
        // Written back (a new attempt count), it is marked and of the current version.
        let rewritten = try OutboxStoredItem.decode(try decoded.encoded(), expected: Self.name)
        #expect(rewritten.record.version == OutboxRecord.currentVersion)
        // Cut short, it is refused as before.
        #expect(Self.detail(try Self.unmarkedFile(body: body).dropLast(2)) != nil)
        // Marked, with a matching checksum, but claiming version 1: refused, not misread.
        var marked = try Self.unmarkedFile(body: body)
        let checksum = String(CRC32.checksum(marked), radix: 16)
        marked.append(Data(("\nconveyor-outbox-end " + String(repeating: "0", count: 8 - checksum.count) + checksum + "\n").utf8))
        #expect(Self.detail(marked)?.contains("record version 1") == true, "\(Self.detail(marked) ?? "read")")
    }

    @Test(
        "An outbox opening a directory with a record a crash left unfinished and a record 0.3.0 wrote: the first set aside and reported, the second sent; nothing sent for the first"
    )
    func unfinishedAndUnmarkedOnDisk() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        var ids: [UUID] = []
        do {
            let outbox = try testClient(server, .curl).outbox(directory: directory.url)
            for index in 0..<3 { ids.append(try await outbox.send(method: .post, path: "apply", parameters: ["n": index])) }
            outbox.close()
        }
        let items = directory.url.appendingPathComponent("items")
        let records = directory.names(in: "items").filter { $0.hasSuffix(".item") }.sorted()
        #expect(records.count == 3 && directory.names(in: "items").count == 3)  // no temporary file, no body file
        // The first: cut where a process killed in the middle of its write leaves it.
        let first = items.appendingPathComponent(records[0])
        let whole = try Data(contentsOf: first)
        try whole.prefix(whole.count / 2).write(to: first)
        // The second: rewritten as 0.3.0 wrote it, without an end mark.
        let second = items.appendingPathComponent(records[1])
        let (secondName, _) = try #require(OutboxItemName.parse(records[1]))
        let stored = try OutboxStoredItem.decode(try Data(contentsOf: second), expected: secondName)
        var old = stored.record
        old.version = OutboxRecord.unmarkedVersion
        var oldFile = try old.encoded()
        oldFile.append(0x0A)
        oldFile.append(try #require(stored.inlineBody))
        try oldFile.write(to: second)

        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: OutboxTests.quick())
        defer { outbox.close() }
        let results = await ResultLog(outbox).first(3)
        #expect(results.map(\.id) == ids)
        guard case .failed(.outboxFailed(.corruptItem(let movedTo, let detail))) = results[0].outcome else {
            return #expect(Bool(false), "\(results[0].outcome)")
        }
        #expect(detail.hasPrefix("unfinished") && FileManager.default.fileExists(atPath: movedTo.path), "\(detail)")
        for result in results.dropFirst() {
            guard case .succeeded = result.outcome else { return #expect(Bool(false), "\(result.outcome)") }
        }
        #expect(inbox.order == [ids[1].idempotencyKey, ids[2].idempotencyKey])
        #expect(inbox.body(for: ids[1].idempotencyKey) == stored.inlineBody)
    }
}

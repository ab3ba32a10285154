import Foundation

/// The name every file of one item shares: a sequence number (its place in line) and its
/// identifier, `0000000000000007-<uuid>`. The sequence orders the queue without reading any
/// file; the pending queue in memory is these two numbers per item (24 bytes).
struct OutboxItemName: Hashable, Comparable, Sendable {
    let sequence: UInt64
    let id: UUID

    /// `<16 hex digits>-<lower-case uuid>`.
    var stem: String {
        let hex = String(sequence, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex + "-" + id.uuidString.lowercased()
    }

    /// The highest sequence number a name may carry (2^62, far beyond any outbox's life: a
    /// million items a second for 146,000 years). A name above it was not written by an outbox:
    /// it goes to `corrupt/`, so that the next number can never overflow.
    static let maximumSequence: UInt64 = 1 << 62

    /// Reads a stem back; nil for any other name — one that does not round-trip (upper-case
    /// digits, a `+` sign) or whose sequence passes ``maximumSequence``: a name the outbox did
    /// not write is not trusted.
    init?(stem: Substring) {
        guard stem.utf8.count == 16 + 1 + 36, stem.utf8[stem.utf8.index(stem.utf8.startIndex, offsetBy: 16)] == UInt8(ascii: "-"),
            let sequence = UInt64(stem.prefix(16), radix: 16), sequence <= Self.maximumSequence,
            let id = UUID(uuidString: String(stem.suffix(36)))
        else { return nil }
        self.sequence = sequence
        self.id = id
        guard self.stem == stem else { return nil }
    }

    init(sequence: UInt64, id: UUID) {
        self.sequence = sequence
        self.id = id
    }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.sequence < rhs.sequence }

    /// The kinds of file an item has, by extension.
    enum Kind: String {
        /// The record (JSON): the request without its body, attempts so far.
        case item
        /// The request body, when there is one.
        case body
        /// The record, renamed from `.item` when the item's result is handed over: after a crash
        /// it says the result may already have been seen (a redelivery).
        case reported
    }

    /// Splits `0000…-<uuid>.item` into its name and kind; nil for anything else.
    static func parse(_ fileName: String) -> (OutboxItemName, Kind)? {
        guard let dot = fileName.lastIndex(of: "."), let kind = Kind(rawValue: String(fileName[fileName.index(after: dot)...])),
            let name = OutboxItemName(stem: fileName[..<dot])
        else { return nil }
        return (name, kind)
    }

    /// The file of `kind` in `directory`.
    func url(_ kind: Kind, in directory: URL) -> URL {
        directory.appendingPathComponent(fileName(kind), isDirectory: false)
    }

    /// The name of the file of `kind`: `<stem>.<kind>`.
    func fileName(_ kind: Kind) -> String {
        stem + "." + kind.rawValue
    }
}

/// What an item's record file holds: the request as it will be sent (less the client's
/// default headers and credentials, which are added at each attempt) and its history.
struct OutboxRecord: Codable, Sendable {
    /// The format; a record of another version is treated as corrupt rather than misread.
    /// Version 2 files end with an end mark (see ``OutboxStoredItem``); version 1 files (Conveyor
    /// 0.3.0 and earlier, always renamed into place whole) have none and are still read.
    static let currentVersion = 2

    /// The version of records written without an end mark.
    static let unmarkedVersion = 1

    var version = OutboxRecord.currentVersion
    var id: UUID
    var idempotencyKey: String
    var createdAt: Date
    var method: String
    var url: String
    /// Name and value pairs, in order.
    var headers: [[String]]
    /// Nil when the request has no body.
    var bodyLength: Int64?
    /// The body follows the record in its file (small bodies) rather than in a `.body` file.
    var bodyInline = false
    /// Attempts that reached the server (an answer, or a connection lost mid-exchange).
    var attempts: Int
    /// The last failure, as text, for dead letters and logs.
    var lastError: String?

    /// Encodes the record; dates as seconds since 1970, so any platform reads them.
    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        return try encoder.encode(self)
    }

    /// Decodes and checks a record of `version`; the error says what is wrong, for the corrupt report.
    static func decode(_ data: Data, expected name: OutboxItemName, version: Int = currentVersion) throws -> OutboxRecord {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let record = try decoder.decode(OutboxRecord.self, from: data)
        guard record.version == version else { throw Corrupt("record version \(record.version)") }
        guard record.id == name.id else { throw Corrupt("the record's identifier is not its file's") }
        guard let url = URL(string: record.url), url.scheme != nil, url.host != nil else { throw Corrupt("unusable URL") }
        guard HTTPGrammar.isToken(record.method) else { throw Corrupt("the method is not a token") }
        guard record.headers.allSatisfy({ $0.count == 2 }) else { throw Corrupt("a header is not a name and a value") }
        guard (record.bodyLength ?? 0) >= 0, record.attempts >= 0 else { throw Corrupt("a negative count") }
        return record
    }

    /// Why a record was refused.
    struct Corrupt: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }

        /// A file of `count` bytes without a matching end mark: what a crash during `send` leaves.
        static func unfinished(_ count: Int) -> Corrupt {
            Corrupt("unfinished: \(count) bytes without a matching end mark (what a crash during send leaves)")
        }

        /// The record has no end mark (``unfinished(_:)``): its detail begins "unfinished", as documented.
        var isUnfinished: Bool { description.hasPrefix("unfinished") }
    }

    /// `error` as the record keeps it in ``lastError``: its description, at most 4,096
    /// characters, so that a rewritten record stays far below ``OutboxStoredItem/maximumFileSize``.
    static func text(of error: any Error) -> String {
        String(String(describing: error).prefix(4096))
    }
}

/// A record file's contents: the record, one line of JSON; for a body of up to
/// ``inlineBodyLimit`` bytes, the body itself after the line's end; then the end mark, a line
/// `conveyor-outbox-end <CRC-32 of everything before it, 8 hex digits>`. One file to create,
/// sync and remove per small item instead of two: on ext4 each file created and removed costs
/// more than writing the bytes (inode allocation, a discard on removal).
///
/// A new item's record is written in place under its final name (`send` has no rename and, on
/// Linux, no directory sync to wait for), so a crash or a power cut during `send` can leave it cut
/// short, empty, or — after a power cut — full of blocks that were never written. The end mark
/// tells such a file from a finished one: a record is read only when its mark is there and its
/// checksum matches.
struct OutboxStoredItem: Sendable {
    /// Bodies up to this size live inside the record file.
    static let inlineBodyLimit: Int64 = 64 << 10

    /// The most a record file may hold (4 MiB: an inline body and far more headers than any
    /// server takes). `send` refuses a request whose record would be larger (`EFBIG`), and a
    /// larger file under an item's name is set aside without being read.
    static let maximumFileSize: Int64 = 4 << 20

    /// What the end mark's line begins with (after the newline that ends what it covers).
    private static let endMarkLead = Array("\nconveyor-outbox-end ".utf8)
    /// The mark's length: the lead, 8 hex digits, a newline.
    private static let endMarkLength = endMarkLead.count + 8 + 1

    var record: OutboxRecord
    var inlineBody: Data?

    /// The file's bytes, always in the current version (a record read from an unmarked file is
    /// written back marked).
    func encoded() throws -> Data {
        var current = record
        current.version = OutboxRecord.currentVersion
        var data = try current.encoded()
        data.append(0x0A)
        if let inlineBody { data.append(inlineBody) }
        let checksum = String(CRC32.checksum(data), radix: 16)
        data.append(contentsOf: Self.endMarkLead)
        data.append(contentsOf: Array((String(repeating: "0", count: 8 - checksum.count) + checksum + "\n").utf8))
        return data
    }

    /// Reads the record file at `url` (never following a link, at most ``maximumFileSize`` bytes:
    /// `ELOOP`, `EFBIG`) and decodes it; also returns its size.
    /// - Throws: ``DurableFiles/Failure`` or ``OutboxRecord/Corrupt``.
    static func read(_ url: URL, expected name: OutboxItemName) throws -> (stored: OutboxStoredItem, bytes: Int64) {
        let data = try DurableFiles.readFile(url, maximumBytes: maximumFileSize)
        return (try decode(data, expected: name), Int64(data.count))
    }

    /// Reads a record file back: a marked file must have a matching checksum and be of the
    /// current version; an unmarked one must be a whole version 1 record, or it is what a
    /// crash during `send` leaves (reported as unfinished). Checks that an inline body is all there.
    static func decode(_ data: Data, expected name: OutboxItemName) throws -> OutboxStoredItem {
        if let covered = try markedContents(data) {
            return try decodeContents(covered, expected: name, version: OutboxRecord.currentVersion)
        }
        guard firstLineVersion(data) == OutboxRecord.unmarkedVersion else {
            throw OutboxRecord.Corrupt.unfinished(data.count)
        }
        return try decodeContents(data, expected: name, version: OutboxRecord.unmarkedVersion)
    }

    /// What the end mark covers, when the file ends with a well-formed one; nil when it has none.
    /// - Throws: ``OutboxRecord/Corrupt`` when the mark is there but the checksum does not match.
    private static func markedContents(_ data: Data) throws -> Data? {
        guard data.count >= endMarkLength else { return nil }
        let mark = Array(data.suffix(endMarkLength))
        guard mark.starts(with: endMarkLead), mark.last == 0x0A,
            let hex = String(bytes: mark[endMarkLead.count..<(endMarkLength - 1)], encoding: .ascii),
            hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }), let expected = UInt32(hex, radix: 16)
        else { return nil }
        let covered = data.prefix(data.count - endMarkLength)
        let actual = CRC32.checksum(covered)
        guard actual == expected else {
            throw OutboxRecord.Corrupt("the checksum is \(String(actual, radix: 16)), the end mark says \(hex)")
        }
        return covered
    }

    /// The `version` in the first line, when that line is whole JSON that has one.
    private static func firstLineVersion(_ data: Data) -> Int? {
        struct Versioned: Decodable { let version: Int }
        guard let newline = data.firstIndex(of: 0x0A) else { return nil }
        return (try? JSONDecoder().decode(Versioned.self, from: Data(data[data.startIndex..<newline])))?.version
    }

    /// The record line and what follows it, checked.
    private static func decodeContents(_ data: Data, expected name: OutboxItemName, version: Int) throws -> OutboxStoredItem {
        // JSONEncoder escapes newlines inside strings: the first one ends the record.
        guard let newline = data.firstIndex(of: 0x0A) else { throw OutboxRecord.Corrupt("the record has no line end") }
        let record = try OutboxRecord.decode(Data(data[data.startIndex..<newline]), expected: name, version: version)
        let rest = data[data.index(after: newline)...]
        guard record.bodyInline else {
            guard rest.isEmpty else { throw OutboxRecord.Corrupt("bytes after a record without an inline body") }
            return OutboxStoredItem(record: record, inlineBody: nil)
        }
        guard let length = record.bodyLength, Int64(rest.count) == length else {
            throw OutboxRecord.Corrupt("the inline body has \(rest.count) bytes of \(record.bodyLength ?? 0)")
        }
        return OutboxStoredItem(record: record, inlineBody: Data(rest))
    }
}

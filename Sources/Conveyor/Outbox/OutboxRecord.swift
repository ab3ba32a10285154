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

    /// Reads a stem back; nil for any other name.
    init?(stem: Substring) {
        guard stem.utf8.count == 16 + 1 + 36, stem.utf8[stem.utf8.index(stem.utf8.startIndex, offsetBy: 16)] == UInt8(ascii: "-"),
            let sequence = UInt64(stem.prefix(16), radix: 16), let id = UUID(uuidString: String(stem.suffix(36)))
        else { return nil }
        self.sequence = sequence
        self.id = id
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
        /// Empty; present once the item's result is being handed over.
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
        directory.appendingPathComponent(stem + "." + kind.rawValue, isDirectory: false)
    }
}

/// What an item's record file holds: the request as it will be sent (less the client's
/// default headers and credentials, which are added at each attempt) and its history.
struct OutboxRecord: Codable, Sendable {
    /// The format; a record of another version is treated as corrupt rather than misread.
    static let currentVersion = 1

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

    /// Decodes and checks a record; the error says what is wrong, for the corrupt report.
    static func decode(_ data: Data, expected name: OutboxItemName) throws -> OutboxRecord {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let record = try decoder.decode(OutboxRecord.self, from: data)
        guard record.version == currentVersion else { throw Corrupt("record version \(record.version)") }
        guard record.id == name.id else { throw Corrupt("the record's identifier is not its file's") }
        guard let url = URL(string: record.url), url.scheme != nil, url.host != nil else { throw Corrupt("unusable URL") }
        guard HTTPRequestOperation.isToken(record.method) else { throw Corrupt("the method is not a token") }
        guard record.headers.allSatisfy({ $0.count == 2 }) else { throw Corrupt("a header is not a name and a value") }
        guard (record.bodyLength ?? 0) >= 0, record.attempts >= 0 else { throw Corrupt("a negative count") }
        return record
    }

    /// Why a record was refused.
    struct Corrupt: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

import Foundation

/// The on-disk form of a ``CachedResponse``: a magic line, the metadata's length (4 bytes,
/// big-endian), the metadata as JSON, then the body. The metadata carries the body's length
/// and an FNV-1a checksum, so a truncated or corrupted file is detected and never served.
extension CachedResponse {
    static let magic = Data("CONVEYOR-CACHE-2\n".utf8)

    /// Why a stored entry could not be read back.
    enum DecodingError: Error, Equatable {
        case badMagic
        case truncated
        case badMetadata
        case bodyMismatch
    }

    private struct Metadata: Codable {
        var key: String
        var url: String
        var method: String
        var statusCode: Int
        var headers: [[String]]
        var vary: [String: String]
        var requestDate: Double
        var responseDate: Double
        var bodyLength: Int
        var checksum: UInt64
    }

    /// The bytes written to disk.
    func encoded() throws -> Data {
        let metadata = Metadata(
            key: key, url: url.absoluteString, method: method, statusCode: statusCode,
            headers: headers.map { [$0.name, $0.value] }, vary: varyingRequestHeaders,
            // Reference-date seconds: exactly what Date stores, so a round trip is exact
            // (1970-based seconds went through a float addition and could differ by an ulp).
            requestDate: requestDate.timeIntervalSinceReferenceDate, responseDate: responseDate.timeIntervalSinceReferenceDate,
            bodyLength: data.count, checksum: Self.checksum(data))
        let json = try JSONEncoder().encode(metadata)
        var bytes = Self.magic
        var length = UInt32(json.count).bigEndian
        withUnsafeBytes(of: &length) { bytes.append(contentsOf: $0) }
        bytes.append(json)
        bytes.append(data)
        return bytes
    }

    /// Reads an entry written by ``encoded()``.
    /// - Throws: ``DecodingError`` for anything that is not a complete, intact entry.
    static func decode(_ bytes: Data) throws -> (key: String, response: CachedResponse) {
        let bytes = Data(bytes)  // rebase indices at 0
        let (key, response, end) = try parse(bytes, at: 0)
        guard end == bytes.count else { throw DecodingError.truncated }
        return (key, response)
    }

    /// Reads the variants of one URL stored in one file: entries written by ``encoded()``
    /// one after the other, all under the same key (a file of one entry is a set of one).
    /// - Throws: ``DecodingError`` when any entry is damaged or the keys differ.
    static func decodeVariants(_ bytes: Data) throws -> (key: String, responses: [CachedResponse]) {
        let bytes = Data(bytes)
        var offset = 0
        var key: String?
        var responses: [CachedResponse] = []
        repeat {
            let (entryKey, response, end) = try parse(bytes, at: offset)
            guard key == nil || key == entryKey else { throw DecodingError.badMetadata }
            key = entryKey
            responses.append(response)
            offset = end
        } while offset < bytes.count
        return (key ?? "", responses)
    }

    /// Parses the entry starting at `start` (indices from 0); returns where it ends.
    private static func parse(_ bytes: Data, at start: Int) throws -> (key: String, response: CachedResponse, end: Int) {
        guard bytes.count - start >= magic.count + 4 else { throw DecodingError.truncated }
        guard bytes[start..<start + magic.count] == magic else { throw DecodingError.badMagic }
        let lengthBytes = bytes[start + magic.count..<start + magic.count + 4]
        let length = lengthBytes.reduce(0) { $0 << 8 | Int($1) }
        let metadataStart = start + magic.count + 4
        guard length > 0, bytes.count - metadataStart >= length else { throw DecodingError.truncated }
        guard let metadata = try? JSONDecoder().decode(Metadata.self, from: bytes[metadataStart..<metadataStart + length]),
            let url = URL(string: metadata.url), (100...599).contains(metadata.statusCode),
            metadata.headers.allSatisfy({ $0.count == 2 }), metadata.bodyLength >= 0,
            metadata.requestDate.isFinite, metadata.responseDate.isFinite
        else { throw DecodingError.badMetadata }
        let bodyStart = metadataStart + length
        guard bytes.count - bodyStart >= metadata.bodyLength else { throw DecodingError.truncated }
        let body = bytes[bodyStart..<bodyStart + metadata.bodyLength]
        guard checksum(body) == metadata.checksum else { throw DecodingError.bodyMismatch }
        var headers = HTTPHeaders()
        for pair in metadata.headers { headers[pair[0]] = pair[1] }
        let response = CachedResponse(
            url: url, method: metadata.method, statusCode: metadata.statusCode, headers: headers, data: Data(body),
            varyingRequestHeaders: metadata.vary,
            requestDate: Date(timeIntervalSinceReferenceDate: metadata.requestDate),
            responseDate: Date(timeIntervalSinceReferenceDate: metadata.responseDate))
        return (metadata.key, response, bodyStart + metadata.bodyLength)
    }

    /// 64-bit FNV-1a: enough to catch a damaged file (this is not a security check).
    static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt64 where Bytes.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// The entry's file name: the key's checksum in hex (the key itself is inside the file,
    /// so a collision reads as a miss, never as another URL's response).
    static func fileName(forKey key: String) -> String {
        let hash = checksum(Array(key.utf8))
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + ".entry"
    }
}

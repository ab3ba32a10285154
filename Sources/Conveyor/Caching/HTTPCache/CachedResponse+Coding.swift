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
        let (key, responses) = try decodeVariants(bytes)
        guard responses.count == 1 else { throw DecodingError.truncated }
        return (key, responses[0])
    }

    /// Reads the variants of one URL stored in one file: entries written by ``encoded()``
    /// one after the other, all under the same key (a file of one entry is a set of one).
    /// - Throws: ``DecodingError`` when any entry is damaged or the keys differ.
    static func decodeVariants(_ bytes: Data) throws -> (key: String, responses: [CachedResponse]) {
        let bytes = Data(bytes)  // rebase indices at 0
        var offset = 0
        return try decodeVariants(size: bytes.count) { count in
            let end = min(bytes.count, offset + count)
            defer { offset = end }
            return bytes[offset..<end]
        }
    }

    /// The most bytes of metadata (URL, header fields, `Vary` values) one entry may have. A
    /// header section passes curl's and corelibs' limits well below this; a length beyond it is
    /// a damaged file, refused before anything is read for it.
    static let maximumMetadataLength = 4 << 20

    /// Reads the variants of one file of `size` bytes through `read` (which returns up to the
    /// count asked, fewer only at the end), never asking for more than the next field needs:
    /// the magic line and length first, then the metadata (at most ``maximumMetadataLength``),
    /// then the body its metadata announces — each checked against what is left of `size`
    /// before it is read, so a damaged or foreign file costs a few bytes, not its size.
    /// - Throws: ``DecodingError`` when any entry is damaged or the keys differ.
    static func decodeVariants(size: Int, read: (Int) throws -> Data) throws -> (key: String, responses: [CachedResponse]) {
        var remaining = size
        func take(_ count: Int) throws -> Data {
            guard count <= remaining else { throw DecodingError.truncated }
            let bytes = Data(try read(count))  // rebased at 0
            guard bytes.count == count else { throw DecodingError.truncated }
            remaining -= count
            return bytes
        }
        var key: String?
        var responses: [CachedResponse] = []
        repeat {
            let prefix = try take(magic.count + 4)
            guard prefix.prefix(magic.count) == magic else { throw DecodingError.badMagic }
            let length = prefix.suffix(4).reduce(0) { $0 << 8 | Int($1) }
            guard length > 0, length <= maximumMetadataLength else { throw DecodingError.badMetadata }
            let metadata = try decodeMetadata(try take(length))
            let body = try take(metadata.bodyLength)
            guard checksum(body) == metadata.checksum else { throw DecodingError.bodyMismatch }
            guard key == nil || key == metadata.key else { throw DecodingError.badMetadata }
            key = metadata.key
            responses.append(try response(from: metadata, body: body))
        } while remaining > 0
        return (key ?? "", responses)
    }

    private static func decodeMetadata(_ bytes: Data) throws -> Metadata {
        guard let metadata = try? JSONDecoder().decode(Metadata.self, from: bytes), URL(string: metadata.url) != nil,
            (100...599).contains(metadata.statusCode), metadata.headers.allSatisfy({ $0.count == 2 }), metadata.bodyLength >= 0,
            metadata.requestDate.isFinite, metadata.responseDate.isFinite
        else { throw DecodingError.badMetadata }
        return metadata
    }

    private static func response(from metadata: Metadata, body: Data) throws -> CachedResponse {
        guard let url = URL(string: metadata.url) else { throw DecodingError.badMetadata }
        var headers = HTTPHeaders()
        for pair in metadata.headers { headers[pair[0]] = pair[1] }
        return CachedResponse(
            url: url, method: metadata.method, statusCode: metadata.statusCode, headers: headers, data: body,
            varyingRequestHeaders: metadata.vary,
            requestDate: Date(timeIntervalSinceReferenceDate: metadata.requestDate),
            responseDate: Date(timeIntervalSinceReferenceDate: metadata.responseDate))
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

import Conveyor
import ConveyorTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The cache's limits count what it holds (issue 37, item 18): header fields count against the
/// memory limit, and a disk entry is read no further than its checked fields allow.
@Suite("HTTP cache bounds: memory counts headers, disk entries are read bounded", .timeLimit(.notAHang))
struct HTTPCacheBoundsTests {
    /// 48 header fields of 1,000 bytes each.
    static let heavyHeaders: HTTPHeaders = {
        var headers = HTTPHeaders()
        let value = String(repeating: "v", count: 1000)
        for index in 0..<48 { headers["X-Pad-\(index)"] = value }
        return headers
    }()

    /// The bytes an entry really holds: its body, its header names and values, its URL.
    static func heldBytes(_ entry: CachedResponse) -> Int {
        entry.data.count + entry.url.absoluteString.utf8.count + entry.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
    }

    @Test(
        "Responses with 48 kB of header fields fill a 1 MB memory cache by what they hold", arguments: HTTPClient.TransportKind.testedKinds)
    func headersCountOverTheWire(transport: HTTPClient.TransportKind) async throws {
        let cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0)
        try await withServer { server, _ in
            server.route("/heavy") { _ in
                var response = LocalHTTPServer.Response.text("x")
                for field in Self.heavyHeaders { response.headers[field.name] = field.value }
                response.headers["Cache-Control"] = "max-age=600"
                return response
            }
            let client = testClient(server, transport) { $0.cache = cache }
            for index in 0..<100 { _ = try await client.get("heavy", parameters: ["i": index]) }
            let urls = (0..<100).map { URL(string: "heavy?i=\($0)", relativeTo: server.baseURL)!.absoluteURL }
            let kept = urls.compactMap { cache.cachedResponse(for: URLRequest(url: $0)) }
            let held = kept.reduce(0) { $0 + Self.heldBytes($1) }
            #expect(!kept.isEmpty && kept.allSatisfy { $0.headers["X-Pad-47"]?.count == 1000 })
            #expect(held <= cache.memoryCapacity, "\(kept.count) entries hold \(held) bytes")
            #expect(cache.currentMemoryUsage >= held && cache.currentMemoryUsage <= cache.memoryCapacity)
        }
    }

    @Test("3,000 URLs with 48 × 1 kB header fields: the memory cache's cost covers every stored byte and stays within 1 MB")
    func threeThousandURLs() throws {
        let cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0)
        let urls = (0..<3000).map { URL(string: "http://example.test/item/\($0)")! }
        for url in urls {
            cache.store(CachedResponse(url: url, statusCode: 200, headers: Self.heavyHeaders, data: Data(repeating: 1, count: 100)))
        }
        let kept = urls.compactMap { cache.cachedResponse(for: URLRequest(url: $0)) }
        let held = kept.reduce(0) { $0 + Self.heldBytes($1) }
        // The newest stay; about 20 of 49 kB each fit in 1 MB (with the body alone counted, 1,600 did).
        #expect(kept.count >= 15 && kept.count <= 21, "\(kept.count) kept")
        #expect(held <= 1_000_000 && cache.currentMemoryUsage >= held && cache.currentMemoryUsage <= 1_000_000)
    }

    /// Stores one entry for `url` in a cache on `directory`, then replaces its file with
    /// `header` followed by zeros up to `size` bytes (a sparse file: no disk is used).
    private func damageEntry(in directory: URL, url: URL, header: Data, size: Int) throws -> URL {
        let cache = HTTPCache(memoryCapacity: 0, diskCapacity: 1_000_000_000, directory: directory)
        cache.store(CachedResponse(url: url, statusCode: 200, headers: ["Cache-Control": "max-age=600"], data: Data("ok".utf8)))
        cache.flush()
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        let file = try #require(files.first { $0.pathExtension == "entry" })
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: header)
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
        return file
    }

    @Test(
        "A 200 MB damaged disk entry is refused and removed without being read into memory",
        arguments: [
            ("garbage", Data("not a cache entry at all".utf8)),
            // The right magic line, then a metadata length of 2 GB: refused before it is read.
            ("huge metadata", Data("CONVEYOR-CACHE-2\n".utf8) + Data([0x7F, 0xFF, 0xFF, 0xFF])),
            // The right magic line and a small metadata length, then zeros: not JSON.
            ("zeros", Data("CONVEYOR-CACHE-2\n".utf8) + Data([0x00, 0x10, 0x00, 0x00])),
        ])
    func damagedEntryReadBounded(name: String, header: Data) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-cache-bounds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = URL(string: "http://example.test/damaged")!
        let file = try damageEntry(in: directory, url: url, header: header, size: 200_000_000)
        // A process of its own: its peak resident size shows whether the file was read whole.
        let child = try HelperProcess(["cache-read", directory.path, url.absoluteString, "1000000000"])
        var lines = child.lines.makeAsyncIterator()
        let line = try #require(await lines.next())
        await child.exited()
        let words = line.split(separator: " ")
        #expect(words.count == 4 && words[1] == "false", "\(name): \(line)")
        let peakKB = words.count == 4 ? Int(words[3]) ?? .max : .max
        #expect(peakKB > 0 && peakKB < 120_000, "\(name): peak \(peakKB) kB")
        #expect(!FileManager.default.fileExists(atPath: file.path), "\(name): the damaged file is removed")
    }
}

import Conveyor
import Foundation
import Testing

/// Conveyor's HTTP cache against httpbin's caching endpoints.
@Suite("HTTP cache conforms with httpbin")
struct HTTPBinCacheTests {
    let client: HTTPClient
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-httpbin-cache-\(UUID().uuidString)")

    init() async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.cache = HTTPCache(directory: directory)
        client = HTTPClient(baseURL: try await HTTPBin.baseURL(), configuration: configuration)
    }

    /// Two GETs of `path`; returns where each response came from and whether the bodies match.
    func twice(_ path: String, parameters: Parameters? = nil) async throws -> ([HTTPCache.ResponseSource], sameBody: Bool) {
        let first = try await client.response(method: .get, path: path, parameters: parameters)
        let second = try await client.response(method: .get, path: path, parameters: parameters)
        #expect(first.statusCode == 200 && second.statusCode == 200)
        return ([first.source, second.source], first.data == second.data)
    }

    @Test("/cache: stored with its validators; the second call is a conditional request answered 304")
    func cacheEndpoint() async throws {
        let (sources, same) = try await twice("cache")
        #expect(sources == [.network, .revalidatedCache] && same)
    }

    @Test("/cache/60: public, max-age=60 answers the second call from the cache")
    func cacheMaxAge() async throws {
        let (sources, same) = try await twice("cache/60")
        #expect(sources == [.network, .cache] && same)
    }

    @Test("/etag/{etag}: If-None-Match gets a 304; the caller sees the stored 200")
    func etag() async throws {
        let (sources, same) = try await twice("etag/conveyor-1")
        #expect(sources == [.network, .revalidatedCache] && same)
    }

    @Test(
        "/response-headers: no-store is never stored, max-age is",
        arguments: [
            ("no-store", HTTPCache.ResponseSource.network),
            ("max-age=60", .cache),
            ("public, max-age=60", .cache),
        ])
    func responseHeaders(cacheControl: String, expected: HTTPCache.ResponseSource) async throws {
        let (sources, _) = try await twice("response-headers", parameters: ["Cache-Control": cacheControl])
        #expect(sources == [.network, expected])
    }

    @Test("/response-headers: no-cache is stored but never answers without asking the server, even within its max-age")
    func noCacheRevalidates() async throws {
        // Fresh for 60 s by max-age, yet no-cache (RFC 9111 §5.2.2.4) sends every later GET to the
        // server. httpbin's /response-headers ignores conditions, so the revalidation's answer is
        // a 200 from the network, not a 304.
        let parameters: Parameters = ["Cache-Control": "no-cache, max-age=60", "ETag": "\"conveyor-no-cache\""]
        let (sources, same) = try await twice("response-headers", parameters: parameters)
        #expect(sources == [.network, .network] && same)
        // Stored all the same: a client of the same cache that may not load finds it there.
        var configuration = HTTPClient.Configuration.default
        configuration.cache = client.configuration.cache
        configuration.cachePolicy = .returnCacheDontLoad
        let offline = HTTPClient(baseURL: client.baseURL!, configuration: configuration)
        let stored = try await offline.response(method: .get, path: "response-headers", parameters: parameters)
        #expect(stored.source == .cache && stored.statusCode == 200)
        try? FileManager.default.removeItem(at: directory)
    }

    @Test("Entries from httpbin survive on disk for a second cache")
    func onDisk() async throws {
        _ = try await client.get("cache/60")
        client.configuration.cache?.flush()
        var configuration = HTTPClient.Configuration.default
        configuration.cache = HTTPCache(directory: directory)
        let restarted = HTTPClient(baseURL: client.baseURL!, configuration: configuration)
        #expect(try await restarted.response(method: .get, path: "cache/60").source == .cache)
        try? FileManager.default.removeItem(at: directory)
    }
}

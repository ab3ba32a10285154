import Conveyor
import ConveyorLocking
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A cache in its own temporary directory, removed when the test ends.
final class ScratchCache: Sendable {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-cache-\(UUID().uuidString)")
    let cache: HTTPCache

    init(memoryCapacity: Int = 4_000_000, diskCapacity: Int = 20_000_000) {
        cache = HTTPCache(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, directory: directory)
    }

    /// A second cache on the same directory, as after a restart.
    func reopened(memoryCapacity: Int = 4_000_000, diskCapacity: Int = 20_000_000) -> HTTPCache {
        cache.flush()
        return HTTPCache(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, directory: directory)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

/// Runs `body` with a server and a client using a scratch cache.
func withCachingServer<T>(
    _ scratch: ScratchCache = ScratchCache(), configure: (inout HTTPClient.Configuration) -> Void = { _ in },
    _ body: (LocalHTTPServer, HTTPClient, HTTPCache) async throws -> T
) async throws -> T {
    var configuration = HTTPClient.Configuration.default
    configuration.cache = scratch.cache
    configure(&configuration)
    return try await withServer(configuration: configuration) { server, client in
        try await body(server, client, scratch.cache)
    }
}

extension LocalHTTPServer {
    /// A route answering with `headers` and a body naming how many times it was hit.
    func countingRoute(_ path: String, headers: HTTPHeaders) {
        let hits = Lock(0)
        route(path) { request in
            let count = hits.withLock {
                $0 += 1
                return $0
            }
            var response = LocalHTTPServer.Response.text("\(request.target) #\(count)")
            for (name, value) in headers { response.headers[name] = value }
            return response
        }
    }
}

@Suite("HTTP cache against LocalHTTPServer")
struct HTTPCacheTests {
    @Test("A max-age response answers the second call without the server; the source says so")
    func maxAgeHit() async throws {
        try await withCachingServer { server, client, _ in
            server.countingRoute("/fresh", headers: ["Cache-Control": "max-age=60"])
            let first = try await client.response(method: .get, path: "fresh")
            let second = try await client.response(method: .get, path: "fresh")
            #expect(server.requestCount(path: "/fresh") == 1)
            #expect(first.source == .network && second.source == .cache)
            #expect(second.statusCode == 200 && second.data == first.data)
            #expect(second.response.value(forHTTPHeaderField: "Age") != nil)
        }
    }

    @Test("Query strings are part of the key: /search?q=a never answers /search?q=b")
    func queryStringsDistinct() async throws {
        try await withCachingServer { server, client, _ in
            server.countingRoute("/search", headers: ["Cache-Control": "max-age=60"])
            let a = try await client.get("search", parameters: ["q": "a"])
            let b = try await client.get("search", parameters: ["q": "b"])
            let a2 = try await client.get("search", parameters: ["q": "a"])
            #expect(String(decoding: a, as: UTF8.self) == "/search?q=a #1")
            #expect(String(decoding: b, as: UTF8.self) == "/search?q=b #2")
            #expect(a2 == a && server.requestCount(path: "/search") == 2)
        }
    }

    @Test("Vary: a different Accept-Language is a miss, the same one a hit")
    func varyHonoured() async throws {
        try await withCachingServer { server, client, _ in
            server.countingRoute("/vary", headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"])
            func get(_ language: String) async throws -> HTTPResponse<Data> {
                var request = try client.request(method: .get, path: "vary")
                request.setValue(language, forHTTPHeaderField: "Accept-Language")
                return try await client.response(for: request, responseSerializer: DataResponseSerializer())
            }
            let sources = [try await get("en").source, try await get("fr").source, try await get("fr").source]
            #expect(sources == [.network, .network, .cache])
            #expect(server.requestCount(path: "/vary") == 2)
        }
    }

    @Test(
        "Vary: each variant is kept — en, fr, en, fr costs two requests — and survives a restart",
        arguments: HTTPClient.TransportKind.testedKinds)
    func varyVariantsKept(transport: HTTPClient.TransportKind) async throws {
        let scratch = ScratchCache()
        let configure: (inout HTTPClient.Configuration) -> Void = { $0.transport = transport }
        try await withCachingServer(scratch, configure: configure) { server, client, _ in
            server.countingRoute("/vary", headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"])
            func get(_ language: String, on client: HTTPClient) async throws -> HTTPResponse<Data> {
                var request = try client.request(method: .get, path: "vary")
                request.setValue(language, forHTTPHeaderField: "Accept-Language")
                return try await client.response(for: request, responseSerializer: DataResponseSerializer())
            }
            var sources: [HTTPCache.ResponseSource] = []
            var bodies: [String: Data] = [:]
            for language in ["en", "fr", "en", "fr"] {
                let response = try await get(language, on: client)
                sources.append(response.source)
                if let first = bodies[language] { #expect(response.data == first) } else { bodies[language] = response.data }
            }
            #expect(sources == [.network, .network, .cache, .cache])
            #expect(server.requestCount(path: "/vary") == 2)

            // Both variants are on disk: a new cache on the directory answers both.
            var configuration = HTTPClient.Configuration.default
            configuration.transport = transport
            configuration.cache = scratch.reopened()
            let restarted = HTTPClient(baseURL: server.baseURL, configuration: configuration)
            #expect(try await get("en", on: restarted).data == bodies["en"])
            #expect(try await get("fr", on: restarted).data == bodies["fr"])
            #expect(server.requestCount(path: "/vary") == 2)
        }
    }

    // One test for both transports, in turn: two cases setting the process-wide cache at once
    // would take each other's.
    @Test("One line at start-up sets HTTPCache.shared: clients and image downloaders created afterwards use it")
    func sharedCacheSetOnce() async throws {
        for transport in HTTPClient.TransportKind.testedKinds { try await sharedCacheSetOnce(transport: transport) }
    }

    private func sharedCacheSetOnce(transport: HTTPClient.TransportKind) async throws {
        let scratch = ScratchCache()
        let previous = HTTPCache.shared
        HTTPCache.shared = scratch.cache
        var configuration = HTTPClient.Configuration()
        configuration.transport = transport
        let downloader = ImageDownloader()
        HTTPCache.shared = previous  // other suites run meanwhile: keep the window short
        #expect(configuration.cache === scratch.cache && downloader.httpCache === scratch.cache)
        try await withServer(configuration: configuration) { server, client in
            server.countingRoute("/shared", headers: ["Cache-Control": "max-age=60"])
            let first = try await client.response(method: .get, path: "shared")
            let second = try await client.response(method: .get, path: "shared")
            #expect(first.source == .network && second.source == .cache && server.requestCount(path: "/shared") == 1)
            #expect(scratch.cache.currentMemoryUsage > 0)
        }
        // nil is the default location, as NSURLCache's diskPath: nil was; memory-only is a disk capacity of 0.
        #expect(HTTPCache(memoryCapacity: 1_000).directory == HTTPCache.defaultDirectory)
        let memoryOnly = HTTPCache(memoryCapacity: 1_000, diskCapacity: 0)
        #expect(memoryOnly.directory == nil && memoryOnly.diskCapacity == 0)
    }

    @Test("A cache starting on a shared directory removes only abandoned temporary files, never a live instance's write")
    func sharedDirectoryStartUp() async throws {
        let scratch = ScratchCache()
        try await withCachingServer(scratch) { server, client, cache in
            server.countingRoute("/kept", headers: ["Cache-Control": "max-age=60"])
            _ = try await client.get("kept")
            cache.flush()
            let directory = scratch.directory
            let dead = try ChildProcess("/bin/true", [])
            await dead.exited()
            let live = directory.appendingPathComponent(".tmp-\(getpid())-\(UUID().uuidString)")  // another instance's write in progress
            let abandoned = directory.appendingPathComponent(".tmp-\(dead.processIdentifier)-\(UUID().uuidString)")
            let stale = directory.appendingPathComponent(".tmp-\(getpid())-\(UUID().uuidString)")
            let unknownFresh = directory.appendingPathComponent(".tmp-12345678-\(UUID().uuidString.dropFirst(9))")  // no owner known
            for file in [live, abandoned, stale, unknownFresh] { try Data("partial".utf8).write(to: file) }
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: stale.path)

            let second = scratch.reopened()
            func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }
            #expect(exists(live) && exists(unknownFresh))
            #expect(!exists(abandoned) && !exists(stale))
            // Entries are the owner's alone: they can hold private responses.
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".entry") {
                let mode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)[.posixPermissions]
                #expect((mode as? NSNumber)?.intValue == 0o600, "\(name)")
            }
            // The entry the first instance wrote is served by the second.
            var request = try client.request(method: .get, path: "kept")
            request.httpMethod = "GET"
            #expect(second.cachedResponse(for: request) != nil)
        }
    }

    /// A client on `cache` with a cookie storage of its own, holding `cookie` for the server.
    private func client(
        _ server: LocalHTTPServer, cache: HTTPCache, transport: HTTPClient.TransportKind, cookie: String? = nil
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = cache
        configuration.monitorsReachability = false
        let session = URLSessionConfiguration.default
        let storage = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "conveyor-tests-\(UUID().uuidString)")
        if let cookie, let made = HTTPCookie(properties: [.name: "user", .value: cookie, .domain: "127.0.0.1", .path: "/"]) {
            storage.setCookie(made)
        }
        session.httpCookieStorage = storage
        configuration.sessionConfiguration = session
        return HTTPClient(baseURL: server.baseURL, configuration: configuration)
    }

    @Test(
        "One shared cache, two users: a response fetched with a credential is not served to a client without it",
        arguments: HTTPClient.TransportKind.testedKinds)
    func credentialResponsesNotShared(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/private") { request in
            guard request.headers["Authorization"] == "Basic " + Data("ada:pw".utf8).base64EncodedString() else {
                return LocalHTTPServer.Response.text("who?", status: 401).with(headers: ["WWW-Authenticate": "Basic realm=\"r\""])
            }
            return .text("ada's data").with(headers: ["Cache-Control": "max-age=60"])
        }
        let cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0)
        let ada = client(server, cache: cache, transport: transport)
        ada.defaultCredential = URLCredential(user: "ada", password: "pw", persistence: .none)
        #expect(String(decoding: try await ada.get("private"), as: UTF8.self) == "ada's data")
        let stranger = client(server, cache: cache, transport: transport)
        await #expect {
            _ = try await stranger.get("private")
        } throws: { error in
            guard case .authenticationFailed? = error as? ConveyorError else { return false }
            return true
        }
    }

    @Test("Vary: Cookie tells cookie jars apart, and Set-Cookie is never stored", arguments: HTTPClient.TransportKind.testedKinds)
    func cookiesAndTheCache(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/mine") { request in
            .text("for \(request.headers["Cookie"] ?? "nobody")").with(headers: ["Cache-Control": "max-age=60", "Vary": "Cookie"])
        }
        server.route("/sets-cookie") { _ in
            .text("hello").with(headers: ["Cache-Control": "max-age=60", "Set-Cookie": "session=s3cr3t; Path=/"])
        }
        let cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0)
        let alice = client(server, cache: cache, transport: transport, cookie: "alice")
        let bob = client(server, cache: cache, transport: transport, cookie: "bob")
        #expect(String(decoding: try await alice.get("mine"), as: UTF8.self) == "for user=alice")
        #expect(String(decoding: try await bob.get("mine"), as: UTF8.self) == "for user=bob")
        #expect(String(decoding: try await alice.get("mine"), as: UTF8.self) == "for user=alice")
        #expect(server.requestCount(path: "/mine") == 2)

        let first = try await alice.response(method: .get, path: "sets-cookie")
        #expect(first.response.value(forHTTPHeaderField: "Set-Cookie") != nil)
        let cached = try await bob.response(method: .get, path: "sets-cookie")
        #expect(cached.source == .cache && cached.response.value(forHTTPHeaderField: "Set-Cookie") == nil)
        #expect(server.requestCount(path: "/sets-cookie") == 1)
    }

    @Test("Vary: at most maximumVariantsPerURL variants are kept, the oldest dropped first")
    func varyVariantsBounded() throws {
        let cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0)
        let url = URL(string: "https://example.com/vary")!
        let count = HTTPCache.maximumVariantsPerURL + 2
        for index in 0..<count {
            cache.store(
                CachedResponse(
                    url: url, method: "GET", statusCode: 200, headers: ["Vary": "Accept-Language", "Cache-Control": "max-age=60"],
                    data: Data("v\(index)".utf8), varyingRequestHeaders: ["accept-language": "l\(index)"]))
        }
        func lookup(_ index: Int) -> Data? {
            var request = URLRequest(url: url)
            request.setValue("l\(index)", forHTTPHeaderField: "Accept-Language")
            return cache.cachedResponse(for: request)?.data
        }
        #expect(lookup(0) == nil && lookup(1) == nil)
        for index in 2..<count { #expect(lookup(index) == Data("v\(index)".utf8)) }
        // A response without Vary replaces every variant.
        cache.store(
            CachedResponse(url: url, method: "GET", statusCode: 200, headers: ["Cache-Control": "max-age=60"], data: Data("plain".utf8)))
        #expect(lookup(count - 1) == Data("plain".utf8))
    }

    @Test("An ETag revalidates: the server's 304 reaches the caller as a 200 with the stored body")
    func etagRevalidation() async throws {
        try await withCachingServer { server, client, _ in
            server.route("/etag") { request in
                if request.headers["If-None-Match"] == "\"v1\"" { return .init(status: 304, headers: ["ETag": "\"v1\""]) }
                return .text("tagged body", contentType: "text/plain").with(headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache"])
            }
            let first = try await client.response(method: .get, path: "etag")
            let second = try await client.response(method: .get, path: "etag")
            #expect(server.requestCount(path: "/etag") == 2)
            #expect(server.receivedRequests.last?.headers["If-None-Match"] == "\"v1\"")
            #expect(first.source == .network && second.source == .revalidatedCache)
            #expect(second.statusCode == 200 && String(decoding: second.data, as: UTF8.self) == "tagged body")
        }
    }

    @Test("Last-Modified revalidates with If-Modified-Since once the entry is stale (Age past max-age)")
    func lastModifiedRevalidation() async throws {
        try await withCachingServer { server, client, _ in
            let modified = "Tue, 01 Sep 2026 10:00:00 GMT"
            server.route("/modified") { request in
                if request.headers["If-Modified-Since"] == modified { return .init(status: 304) }
                return .text("dated").with(headers: ["Last-Modified": modified, "Cache-Control": "max-age=60", "Age": "120"])
            }
            _ = try await client.get("modified")
            let second = try await client.response(method: .get, path: "modified")
            #expect(second.source == .revalidatedCache && String(decoding: second.data, as: UTF8.self) == "dated")
            #expect(server.requestCount(path: "/modified") == 2)
        }
    }

    @Test("no-store is never stored; POST is never answered from the cache and invalidates the URL")
    func noStoreAndPost() async throws {
        try await withCachingServer { server, client, cache in
            server.countingRoute("/secret", headers: ["Cache-Control": "max-age=60, no-store"])
            _ = try await client.get("secret")
            _ = try await client.get("secret")
            #expect(server.requestCount(path: "/secret") == 2)
            server.countingRoute("/doc", headers: ["Cache-Control": "max-age=60"])
            _ = try await client.get("doc")
            _ = try await client.post("doc", parameters: ["k": "v"])
            _ = try await client.post("doc", parameters: ["k": "v"])
            #expect(server.requestCount(path: "/doc") == 3)
            #expect(cache.cachedResponse(for: try client.request(method: .get, path: "doc")) == nil)
            _ = try await client.get("doc")
            #expect(server.requestCount(path: "/doc") == 4)
        }
    }

    @Test("Offline policy: while the client is unreachable a stale entry answers without the network")
    func offlineWhenUnreachable() async throws {
        let scripted = ScriptedReachability()
        scripted.set(.reachable(.ethernetOrWiFi))
        let configure: (inout HTTPClient.Configuration) -> Void = {
            $0.reachabilityProbe = scripted
            $0.reachabilityEvents = scripted
            $0.cachePolicy = .returnCacheDataWhenUnreachable
        }
        try await withCachingServer(configure: configure) { server, client, _ in
            server.countingRoute("/news", headers: ["Cache-Control": "max-age=0", "ETag": "\"n\""])
            let statuses = ReachabilityTests.Statuses()
            client.setReachabilityStatusChangeHandler(statuses.handler)
            #expect(await statuses.next() == .reachable(.ethernetOrWiFi))
            let online = try await client.response(method: .get, path: "news")
            scripted.set(.notReachable)
            #expect(await statuses.next() == .notReachable)
            let offline = try await client.response(method: .get, path: "news")
            #expect(offline.source == .cache && offline.data == online.data)
            #expect(server.requestCount(path: "/news") == 1)
        }
    }

    @Test("Offline policy: when the server cannot be reached a stale entry answers; without the policy a no-cache entry gives a 504")
    func offlineWhenConnectionRefused() async throws {
        let scratch = ScratchCache()
        var configuration = HTTPClient.Configuration.default
        configuration.cache = scratch.cache
        configuration.monitorsReachability = false
        let server = try LocalHTTPServer.started()
        server.countingRoute("/page", headers: ["Cache-Control": "no-cache", "ETag": "\"p\""])
        let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
        let online = try await client.get("page")
        server.stop()
        await #expect {
            try await client.get("page")
        } throws: { error in
            // `no-cache` forbids serving the entry stale: the cache's 504 (RFC 9111 §4.2.4, §5.2.2.4).
            if case .unacceptableStatusCode(504, _, _) = error as? ConveyorError { true } else { false }
        }
        let operation = client.operation(with: try client.request(method: .get, path: "page"), success: nil, failure: nil)
        operation.cachePolicy = .returnCacheDataWhenUnreachable
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
        #expect(operation.responseData == online && operation.responseSource == .staleOnError)
    }

    @Test("returnCacheDontLoad: a hit answers, a miss fails with resourceUnavailable without a request")
    func cacheOnly() async throws {
        let configure: (inout HTTPClient.Configuration) -> Void = { $0.cachePolicy = .returnCacheDontLoad }
        try await withCachingServer(configure: configure) { server, client, cache in
            await #expect {
                try await client.get("anything")
            } throws: { error in
                if case .network(let urlError) = error as? ConveyorError { urlError.code == .resourceUnavailable } else { false }
            }
            #expect(server.receivedRequests.isEmpty)
            let url = try client.url(for: "anything")
            cache.store(CachedResponse(url: url, statusCode: 200, headers: ["Content-Type": "text/plain"], data: Data("stored".utf8)))
            #expect(String(decoding: try await client.get("anything"), as: UTF8.self) == "stored")
            #expect(server.receivedRequests.isEmpty)
        }
    }

    @Test("Entries survive a new HTTPCache on the same directory")
    func survivesRestart() async throws {
        let scratch = ScratchCache()
        try await withCachingServer(scratch) { server, client, _ in
            server.countingRoute("/kept", headers: ["Cache-Control": "max-age=600"])
            let first = try await client.get("kept")
            var configuration = HTTPClient.Configuration.default
            configuration.cache = scratch.reopened()
            let restarted = HTTPClient(baseURL: server.baseURL, configuration: configuration)
            let second = try await restarted.response(method: .get, path: "kept")
            #expect(second.source == .cache && second.data == first)
            #expect(server.requestCount(path: "/kept") == 1)
        }
    }

    @Test("A corrupted or truncated entry file is discarded, never served", arguments: ["truncated", "flipped"])
    func corruptEntry(damage: String) async throws {
        let scratch = ScratchCache()
        try await withCachingServer(scratch) { server, client, cache in
            server.countingRoute("/fragile", headers: ["Cache-Control": "max-age=600"])
            _ = try await client.get("fragile")
            cache.flush()
            let files = try FileManager.default.contentsOfDirectory(at: scratch.directory, includingPropertiesForKeys: nil)
            let file = try #require(files.first { $0.pathExtension == "entry" })
            var bytes = try Data(contentsOf: file)
            if damage == "truncated" { bytes.removeLast(3) } else { bytes[bytes.count - 2] ^= 0xFF }
            try bytes.write(to: file)
            var configuration = HTTPClient.Configuration.default
            configuration.cache = scratch.reopened()
            let restarted = HTTPClient(baseURL: server.baseURL, configuration: configuration)
            let again = try await restarted.response(method: .get, path: "fragile")
            #expect(again.source == .network && String(decoding: again.data, as: UTF8.self).hasSuffix("#2"))
        }
    }

    @Test("The server's httpbin-like /cache, /cache/{n} and /etag/{etag} routes behave as httpbin's")
    func builtInCacheRoutes() async throws {
        try await withCachingServer { _, client, _ in
            var sources: [HTTPCache.ResponseSource] = []
            for path in ["cache", "cache", "cache/30", "cache/30", "etag/x", "etag/x"] {
                sources.append(try await client.response(method: .get, path: path).source)
            }
            #expect(sources == [.network, .revalidatedCache, .network, .cache, .network, .revalidatedCache])
        }
    }

    @Test("Two clients with two caches on one directory, 80 concurrent GETs: every body is its own URL's")
    func concurrentClientsShareADirectory() async throws {
        let scratch = ScratchCache()
        try await withCachingServer(scratch) { server, client, _ in
            server.countingRoute("/item", headers: ["Cache-Control": "max-age=60", "ETag": "\"i\""])
            var configuration = HTTPClient.Configuration.default
            configuration.cache = HTTPCache(directory: scratch.directory)
            let other = HTTPClient(baseURL: server.baseURL, configuration: configuration)
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<80 {
                    group.addTask {
                        let data = try await (index % 2 == 0 ? client : other).get("item", parameters: ["n": "\(index % 8)"])
                        return String(decoding: data, as: UTF8.self).hasPrefix("/item?n=\(index % 8) #")
                    }
                }
                for try await matched in group { #expect(matched) }
            }
            scratch.cache.flush()
            configuration.cache?.flush()
            let files = try FileManager.default.contentsOfDirectory(atPath: scratch.directory.path)
            #expect(files.filter { $0.hasSuffix(".entry") }.count == 8)
        }
    }

    @Test("The disk limit evicts the least recently used entry")
    func diskEviction() throws {
        let scratch = ScratchCache(memoryCapacity: 0, diskCapacity: 4_000)
        let base = URL(string: "http://127.0.0.1:1/")!
        func entry(_ name: String) -> CachedResponse {
            CachedResponse(
                url: base.appendingPathComponent(name), statusCode: 200, headers: ["Cache-Control": "max-age=60"],
                data: Data(repeating: 0x61, count: 900))
        }
        let cache = scratch.cache
        cache.store(entry("a"))
        cache.store(entry("b"))
        cache.store(entry("c"))
        cache.flush()
        #expect(cache.cachedResponse(for: URLRequest(url: base.appendingPathComponent("a"))) != nil)  // a is now the newest
        cache.store(entry("d"))
        cache.flush()
        let reopened = scratch.reopened(memoryCapacity: 0, diskCapacity: 4_000)
        let kept = ["a", "b", "c", "d"].filter { reopened.cachedResponse(for: URLRequest(url: base.appendingPathComponent($0))) != nil }
        #expect(kept == ["a", "c", "d"])
        #expect(reopened.currentDiskUsage <= 4_000)
    }

    @Test("A cache-response block can change what is stored or refuse it")
    func cacheResponseBlock() async throws {
        try await withCachingServer { server, client, cache in
            server.countingRoute("/edited", headers: ["Cache-Control": "max-age=60"])
            server.countingRoute("/refused", headers: ["Cache-Control": "max-age=60"])
            let handlers: [(String, CacheResponseHandler)] = [
                (
                    "edited",
                    { entry in
                        var copy = entry
                        copy.headers["X-Stored"] = "yes"
                        return copy
                    }
                ), ("refused", { _ in nil }),
            ]
            for (path, handler) in handlers {
                let operation = client.operation(with: try client.request(method: .get, path: path), success: nil, failure: nil)
                operation.setCacheResponseBlock(handler)
                let probe = CompletionProbe()
                probe.attach(to: operation)
                client.enqueue(operation)
                #expect(await probe.outcome().error == nil)
            }
            #expect(cache.cachedResponse(for: try client.request(method: .get, path: "edited"))?.headers["X-Stored"] == "yes")
            #expect(cache.cachedResponse(for: try client.request(method: .get, path: "refused")) == nil)
        }
    }

    @Test("HEAD is answered from a stored GET; reloadIgnoringCache goes to the network and stores again")
    func headAndReload() async throws {
        try await withCachingServer { server, client, _ in
            server.countingRoute("/both", headers: ["Cache-Control": "max-age=60"])
            _ = try await client.get("both")
            let head = try await client.response(method: .head, path: "both")
            #expect(head.source == .cache && head.data.isEmpty)
            var request = try client.request(method: .get, path: "both")
            request.cachePolicy = .reloadIgnoringLocalCacheData
            let reloaded = try await client.response(for: request, responseSerializer: DataResponseSerializer())
            #expect(reloaded.source == .network && String(decoding: reloaded.data, as: UTF8.self).hasSuffix("#2"))
            #expect(String(decoding: try await client.get("both"), as: UTF8.self).hasSuffix("#2"))
            #expect(server.requestCount(path: "/both") == 2)
        }
    }

    @Test("A body above 5% of the capacity streams through and is not kept; removeAll empties both layers")
    func largeBodiesAndRemoveAll() async throws {
        try await withCachingServer(ScratchCache(memoryCapacity: 100_000, diskCapacity: 200_000)) { server, client, cache in
            server.route("/big") { _ in .init(headers: ["Cache-Control": "max-age=60"], body: .data(Data(repeating: 1, count: 50_000))) }
            server.countingRoute("/small", headers: ["Cache-Control": "max-age=60"])
            #expect(try await client.get("big").count == 50_000)
            _ = try await client.get("small")
            cache.flush()
            #expect(cache.cachedResponse(for: try client.request(method: .get, path: "big")) == nil)
            #expect(cache.currentMemoryUsage > 0 && cache.currentDiskUsage > 0)
            cache.removeAll()
            #expect(cache.currentMemoryUsage == 0 && cache.currentDiskUsage == 0)
            #expect(cache.cachedResponse(for: try client.request(method: .get, path: "small")) == nil)
        }
    }
}

extension LocalHTTPServer.Response {
    /// The response with `headers` added.
    func with(headers: HTTPHeaders) -> Self {
        var copy = self
        for (name, value) in headers { copy.headers[name] = value }
        return copy
    }
}

@Suite("HTTP cache freshness (RFC 9111 §4.2)", .serialized)
struct HTTPCacheFreshnessTests {
    static func httpDate(_ offset: TimeInterval) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date().addingTimeInterval(offset))
    }

    static let cases: [(String, [String: String], HTTPCache.ResponseSource)] = [
        ("Expires in the future", ["Expires": httpDate(3600)], .cache),
        ("Expires in the past", ["Expires": httpDate(-60), "ETag": "\"x\""], .network),
        ("an invalid Expires", ["Expires": "0", "ETag": "\"x\""], .network),
        ("Last-Modified ten days ago (heuristic: a day)", ["Last-Modified": httpDate(-10 * 86_400)], .cache),
        ("Last-Modified in the future (heuristic: nothing)", ["Last-Modified": httpDate(3600)], .network),
        ("Age beyond max-age", ["Cache-Control": "max-age=60", "Age": "100"], .network),
        ("Date an hour old beyond max-age", ["Cache-Control": "max-age=60", "Date": httpDate(-3600)], .network),
        ("private in a private cache", ["Cache-Control": "private, max-age=60"], .cache),
        ("max-age wins over Expires", ["Cache-Control": "max-age=0", "Expires": httpDate(3600), "ETag": "\"x\""], .network),
    ]

    @Test("Where the second call's response comes from", arguments: cases.indices)
    func secondCall(index: Int) async throws {
        let (name, headers, expected) = Self.cases[index]
        try await withCachingServer { server, client, _ in
            server.countingRoute("/doc", headers: HTTPHeaders(headers))
            _ = try await client.get("doc")
            let second = try await client.response(method: .get, path: "doc")
            #expect(second.source == expected, "\(name)")
        }
    }

    @Test("A request's own Cache-Control: no-cache and max-age=0 skip a fresh entry")
    func requestDirectives() async throws {
        try await withCachingServer { server, client, _ in
            server.countingRoute("/doc", headers: ["Cache-Control": "max-age=600"])
            _ = try await client.get("doc")
            for directive in ["no-cache", "max-age=0"] {
                var request = try client.request(method: .get, path: "doc")
                request.setValue(directive, forHTTPHeaderField: "Cache-Control")
                #expect(try await client.response(for: request, responseSerializer: DataResponseSerializer()).source == .network)
            }
            #expect(try await client.response(method: .get, path: "doc").source == .cache)
        }
    }
}

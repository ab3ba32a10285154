import Foundation
import Testing

@testable import Conveyor

@Suite("Paths resolve against the base URL as RFC 3986 says")
struct PathResolverTests {
    static let bases = [
        "http://example.com/", "http://example.com/api/v1/", "https://example.com:8443/a/b/", "http://127.0.0.1:8080/",
        "http://example.com/api/?key=1", "http://example.com/api/#top", "http://example.com",
        "http://example.com/a%20b/", "http://user:pa55@example.com/v1/", "http://[::1]:8080/api/",
    ]
    static let paths = [
        "users", "users/1", "users/1/", "small.json", ".hidden", "a.b/c..d", "users?page=2&per_page=50",
        "search?q=a/b?c.d", "a/b/", "users;v=2", "~me/(x)*+,=@!$'", "a//b",
        // Left to Foundation: each of these resolves differently from joining text.
        "/root", "//other.example/x", "?q=1", "", ".", "..", "./a", "../a", "a/./b", "a/../b", "a/..", "a/.",
        "a/..?x", "https://other.example/x", "mailto:x", "a#frag", "a%20b", "a b", "é", "a:b",
    ]

    @Test("Every path gives the URL Foundation's resolution gives", arguments: Self.bases)
    func sameAsFoundation(base: String) throws {
        let resolver = PathResolver(baseURL: try #require(URL(string: base)))
        for path in Self.paths {
            // The empty path is the base itself (RFC 3986 §5.2.2, AFNetworking); corelibs says nil.
            let expected =
                path.isEmpty ? resolver.baseURL.absoluteString : URL(string: path, relativeTo: resolver.baseURL)?.absoluteURL.absoluteString
            #expect(resolver.resolve(path)?.absoluteString == expected, "\(base) + \(path)")
        }
    }

    @Test("Plain relative paths take the shortcut; dot segments, absolute paths and schemes do not")
    func shortcutTakenOnlyWhereSafe() {
        for path in ["users", "users/1", "small.json", ".hidden", "a.b/c..d", "users?page=2", "search?q=a/../b", "a//b"] {
            #expect(PathResolver.isPlainRelativePath(path), "\(path)")
        }
        for path in [
            "", "/root", "//host/x", "?q=1", ".", "..", "./a", "../a", "a/./b", "a/../b", "a/..", "a/.", "a/..?x",
            "http://x", "a:b", "a#b", "a%20b", "a b", "é",
        ] {
            #expect(!PathResolver.isPlainRelativePath(path), "\(path)")
        }
    }

    @Test("A client gives the same URL the second time, from its cache, for more paths than the cache holds")
    func resolvedURLsCached() throws {
        // 4 x 64 slots' worth of paths: every slot is replaced several times over, so a lookup
        // must tell its own path from another that hashed to the same slot.
        let generated = (0..<(4 * ResolvedURLCache.slotCount)).map { "items/\($0)" }
        for base in Self.bases {
            let client = HTTPClient(baseURL: try #require(URL(string: base)))
            let resolver = PathResolver(baseURL: try #require(client.baseURL))
            for round in 0..<2 {
                for path in generated + Self.paths {
                    // What `url(for:)` accepts: an http(s) URL with a host.
                    let expected = resolver.resolve(path).flatMap { url in
                        ["http", "https"].contains(url.scheme?.lowercased()) && url.host?.isEmpty == false ? url.absoluteString : nil
                    }
                    #expect((try? client.url(for: path))?.absoluteString == expected, "\(base) + \(path), round \(round)")
                }
            }
        }
        let cache = ResolvedURLCache()
        let url = try #require(URL(string: "http://example.com/users"))
        cache.store(url, for: "users")
        cache.store(url, for: "users?page=2")  // a query: not kept
        cache.store(url, for: "../users")  // not a plain path: not kept
        cache.store(url, for: String(repeating: "a", count: ResolvedURLCache.maximumPathLength + 1))
        #expect(cache.url(for: "users") == url)
        #expect(cache.url(for: "users?page=2") == nil)
        #expect(cache.url(for: "../users") == nil)
        #expect(cache.url(for: String(repeating: "a", count: ResolvedURLCache.maximumPathLength + 1)) == nil)
    }

    @Test("A client resolves through the shortcut to the same URLs")
    func clientUsesResolver() throws {
        let client = HTTPClient(baseURL: try #require(URL(string: "http://example.com/api/v1")))
        #expect(try client.url(for: "users/1?x=y").absoluteString == "http://example.com/api/v1/users/1?x=y")
        #expect(try client.url(for: "../v2/users").absoluteString == "http://example.com/api/v2/users")
        #expect(try client.request(method: .get, path: "users").httpMethod == "GET")
        #expect(try client.request(method: .delete, path: "users").httpMethod == "DELETE")
    }
}

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

    @Test("A client resolves through the shortcut to the same URLs")
    func clientUsesResolver() throws {
        let client = HTTPClient(baseURL: try #require(URL(string: "http://example.com/api/v1")))
        #expect(try client.url(for: "users/1?x=y").absoluteString == "http://example.com/api/v1/users/1?x=y")
        #expect(try client.url(for: "../v2/users").absoluteString == "http://example.com/api/v2/users")
        #expect(try client.request(method: .get, path: "users").httpMethod == "GET")
        #expect(try client.request(method: .delete, path: "users").httpMethod == "DELETE")
    }
}

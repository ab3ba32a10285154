import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

@Suite("HTTPClient builds requests")
struct HTTPClientRequestTests {
    @Test("A base URL with a path gets a trailing slash, so relative paths append to it")
    func baseURLNormalisation() throws {
        let client = HTTPClient(baseURL: URL(string: "http://example.com/api/v1")!)
        #expect(client.baseURL?.absoluteString == "http://example.com/api/v1/")
        #expect(try client.url(for: "users").absoluteString == "http://example.com/api/v1/users")
        #expect(try client.url(for: "/root").absoluteString == "http://example.com/root")
        #expect(try client.url(for: "users?page=2").absoluteString == "http://example.com/api/v1/users?page=2")
        #expect(try client.url(for: "https://other.example/x").absoluteString == "https://other.example/x")
        #expect(HTTPClient(baseURL: URL(string: "http://example.com")!).baseURL?.absoluteString == "http://example.com")
    }

    @Test(
        "An unresolvable path is a ConveyorError.invalidURL, not a crash",
        arguments: ["mailto:someone@example.com", "http://", "file:///etc/passwd"])
    func invalidPath(path: String) {
        let client = HTTPClient(baseURL: URL(string: "http://example.com/")!)
        #expect {
            try client.request(method: .get, path: path)
        } throws: { error in
            guard case .invalidURL(let badPath, _) = error as? ConveyorError else { return false }
            return badPath == path
        }
    }

    @Test("GET parameters go into the query string, POST parameters into a form body")
    func parameterPlacement() throws {
        let client = HTTPClient(baseURL: URL(string: "http://example.com/")!)
        let get = try client.request(method: .get, path: "search?x=1", parameters: ["q": "a b", "page": 2])
        #expect(get.url?.absoluteString == "http://example.com/search?x=1&page=2&q=a%20b")
        #expect(get.httpBody == nil)
        let post = try client.request(method: .post, path: "form", parameters: ["name": "Zoë", "ok": true])
        #expect(post.url?.query == nil)
        #expect(post.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(post.httpBody.map { String(decoding: $0, as: UTF8.self) } == "name=Zo%C3%AB&ok=1")
    }

    @Test("Default headers: User-Agent names Conveyor, Accept-Language follows the locale, nil removes a header")
    func defaultHeaders() async throws {
        let client = HTTPClient(baseURL: URL(string: "http://example.com/")!)
        #expect(client.defaultValue(forHeader: "user-agent")?.contains("Conveyor/\(ConveyorLibrary.version)") == true)
        // On the wire, the value this process's locale variables give by the rules pinned with
        // literal cases in `acceptLanguageFromLocale` (no header at all for C, POSIX or none).
        #if os(Linux)
            let expected = DefaultHeaderValues.acceptLanguage(
                for: DefaultHeaderValues.languages(environment: ProcessInfo.processInfo.environment))
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            _ = try await testClient(server, .curl).get("get")
            #expect(server.receivedRequests.last?.headers["Accept-Language"] == expected)
        #endif
        client.setDefaultHeader("X-Token", value: "abc")
        #expect(try client.request(method: .get, path: "x").value(forHTTPHeaderField: "X-Token") == "abc")
        client.setDefaultHeader("x-token", value: nil)
        #expect(try client.request(method: .get, path: "x").value(forHTTPHeaderField: "X-Token") == nil)
        #expect(client.defaultHeaders["X-Token"] == nil)
    }

    @Test("Requests share the default header fields, yet a change to one request reaches neither the client nor other requests")
    func defaultHeadersSharedCopyOnWrite() throws {
        let client = HTTPClient(baseURL: URL(string: "http://example.com/")!)
        client.setDefaultHeader("X-Team", value: "core")
        var first = try client.request(method: .get, path: "a")
        first.setValue("only-here", forHTTPHeaderField: "X-First")
        first.setValue("changed", forHTTPHeaderField: "X-Team")
        let second = try client.request(method: .get, path: "a")
        #expect(first.value(forHTTPHeaderField: "X-First") == "only-here")
        #expect(second.value(forHTTPHeaderField: "X-First") == nil)
        #expect(second.value(forHTTPHeaderField: "X-Team") == "core")
        #expect(client.defaultHeaders["X-First"] == nil)
        // Headers for one request replace the defaults of the same name in that request alone.
        let third = try client.request(method: .get, path: "a", headers: ["x-team": "edge"])
        #expect(third.value(forHTTPHeaderField: "X-Team") == "edge")
        #expect(try client.request(method: .get, path: "a").value(forHTTPHeaderField: "X-Team") == "core")
        #expect(second.allHTTPHeaderFields == client.defaultHeaders.dictionary)
    }

    @Test("Accept-Language comes from LANGUAGE, LC_ALL, LC_MESSAGES or LANG; none for the C or POSIX locale")
    func acceptLanguageFromLocale() {
        let languages = DefaultHeaderValues.languages(environment:)
        #expect(languages(["LANG": "en_GB.UTF-8"]) == ["en-GB"])
        #expect(languages(["LANG": "de_DE.UTF-8", "LC_MESSAGES": "fr_CA.UTF-8"]) == ["fr-CA"])
        #expect(languages(["LANG": "de_DE", "LC_ALL": "pt_BR.UTF-8@euro", "LANGUAGE": "pt_BR:pt:en"]) == ["pt-BR", "pt", "en"])
        #expect(languages(["LANG": "C.UTF-8"]).isEmpty && languages(["LC_ALL": "POSIX"]).isEmpty && languages([:]).isEmpty)
        #expect(languages(["LANG": "C.UTF-8", "LANGUAGE": "fr"]).isEmpty)  // GNU ignores LANGUAGE in the C locale
        #expect(DefaultHeaderValues.acceptLanguage(for: ["en-GB", "en", "fr"]) == "en-GB, en;q=0.9, fr;q=0.8")
        #expect(DefaultHeaderValues.acceptLanguage(for: []) == nil)
    }

    @Test("Authorization helpers set Basic and Bearer headers and clear them")
    func authorizationHeaders() {
        let client = HTTPClient(baseURL: URL(string: "http://example.com/")!)
        client.setAuthorizationHeader(username: "user", password: "passwd")
        #expect(client.defaultValue(forHeader: "Authorization") == "Basic dXNlcjpwYXNzd2Q=")
        client.setAuthorizationHeader(token: "t0k3n")
        #expect(client.defaultValue(forHeader: "Authorization") == "Bearer t0k3n")
        client.clearAuthorizationHeader()
        #expect(client.defaultValue(forHeader: "Authorization") == nil)
    }

    @Test("The configured timeout becomes the request's timeout")
    func timeoutOnRequest() throws {
        let client = HTTPClient(baseURL: URL(string: "http://example.com/")!, configuration: .idleTimeout(2.5))
        #expect(try client.request(method: .get, path: "x").timeoutInterval == 2.5)
    }

    @Test(
        "A client without a base URL takes full URLs and refuses relative paths with a typed error",
        arguments: HTTPClient.TransportKind.testedKinds)
    func noBaseURL(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        let client = HTTPClient(configuration: configuration)
        #expect(client.baseURL == nil && client.reachabilityStatus == .unknown)
        let absolute = server.baseURL.appendingPathComponent("get").absoluteString
        let echo = try await client.get(absolute, parameters: ["q": "full"]).jsonObject
        #expect((echo["args"] as? [String: Any])?["q"] as? String == "full")

        await #expect {
            try await client.get("get")
        } throws: { error in
            guard case .invalidURL(let path, let baseURL) = error as? ConveyorError else { return false }
            return path == "get" && baseURL == nil
        }
        let probe = CompletionProbe()
        client.get("/relative", success: probe.success, failure: probe.failure)
        guard case .invalidURL? = await probe.outcome().error else {
            Issue.record("a relative path on a client without a base URL was not invalidURL")
            return
        }
        #expect(server.receivedRequests.count == 1)
    }
}

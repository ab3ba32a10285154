import Conveyor
import ConveyorLocking
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Masking by value (issue 37, D): every credential Conveyor adds is registered, found however
/// a server escapes it, hidden before any cut, and never forgotten while in use. The server
/// echoes with `/raw-headers` (values not keyed by their names), so only masking by value can
/// hide them; the logger runs at `.debug` with a capturing sink.
@Suite("Masking by value: every credential Conveyor adds, escaped forms, mask before cut, no eviction in use")
struct SecretMaskingTests {
    /// A client on `transport` with its own cookie storage (cookies ignore ports: the shared
    /// storage would hand this test's cookie to every other test's server).
    static func client(_ server: LocalHTTPServer, _ transport: HTTPClient.TransportKind) -> HTTPClient {
        testClient(server, transport) { configuration in
            let session = URLSessionConfiguration.default
            session.httpCookieStorage = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "conveyor-\(UUID().uuidString)")
            configuration.sessionConfiguration = session
        }
    }

    /// Text that must not show `secret`, nor any 8-character piece of it.
    static func expectHidden(_ secret: String, in text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let characters = Array(secret)
        let pieces = stride(from: 0, through: max(characters.count - 8, 0), by: 1).map {
            String(characters[$0..<min($0 + 8, characters.count)])
        }
        let shown = pieces.filter { text.contains($0) }
        #expect(
            shown.isEmpty, "\(what) shows \(shown.first ?? "")… of \(secret): \(excerpt(text, showing: shown.first))",
            sourceLocation: sourceLocation)
    }

    /// What a failure prints of a captured log: its line count and at most ten lines, those
    /// holding `needle` if any (issue 53: one failure printed a whole log of 7,554 lines).
    static func excerpt(_ text: String, showing needle: String?) -> String {
        Excerpt.of(text, showing: needle.map { [$0] } ?? [])
    }

    /// Runs one operation for `path` (configured by `configure`) and returns its body as text.
    static func run(_ client: HTTPClient, _ path: String, configure: (HTTPRequestOperation) -> Void = { _ in }) async throws -> String {
        await run(client, try client.request(method: .get, path: path), configure: configure)
    }

    static func run(_ client: HTTPClient, _ request: URLRequest, configure: (HTTPRequestOperation) -> Void = { _ in }) async -> String {
        let operation = client.operation(with: request, success: nil, failure: nil)
        configure(operation)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        _ = await probe.outcome()
        return String(decoding: operation.responseData ?? Data(), as: UTF8.self)
    }

    /// `text` with the hex digits of its percent-escapes in lower case.
    static func lowercasingEscapes(_ text: String) -> String {
        var result = ""
        var pending = 0
        for character in text {
            if character == "%" {
                pending = 2
                result.append(character)
            } else if pending > 0 {
                pending -= 1
                result += character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }

    @Test(
        "A stored cookie, a challenge's Basic answer, URL user information, the authenticator's and per-request tokens never reach the log",
        arguments: HTTPClient.TransportKind.testedKinds)
    func everyCredentialConveyorAdds(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let cookie = "Cookie-Value-4711-\(UUID().uuidString.prefix(8))"
        server.route("/login") { _ in
            LocalHTTPServer.Response(headers: ["Set-Cookie": "sid=\(cookie); Path=/"], body: .data(Data("ok".utf8)))
        }
        // A Basic challenge, then the echo of what the answer carried.
        server.route("/challenged") { request in
            guard request.headers["Authorization"] != nil else {
                return LocalHTTPServer.Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"echo\""])
            }
            return .json(["rawHeaders": request.headers.flatMap { [$0.name, $0.value] }])
        }
        let client = Self.client(server, transport)
        let capture = NetworkLoggerTests.Capture(level: .debug, port: server.port)
        _ = try await client.get("login")
        let echoed = String(decoding: try await client.get("raw-headers"), as: UTF8.self)
        #expect(echoed.contains(cookie), "the cookie was sent: \(echoed)")

        // One operation's credential (not the client's configured one, which is held anyway):
        // only the challenge answer registers it.
        let password = "Answered-Pw-\(UUID().uuidString.prefix(8))"
        let answered = try await Self.run(client, "challenged") {
            $0.credential = URLCredential(user: "bob", password: password, persistence: .none)
        }
        let basic = Data("bob:\(password)".utf8).base64EncodedString()
        #expect(answered.contains(basic), "the challenge was answered: \(answered)")

        // The client's default credential, answered to a challenge on both transports.
        let configured = "Default-Credential-Pw-\(UUID().uuidString.prefix(8))"
        client.defaultCredential = URLCredential(user: "eve", password: configured, persistence: .none)
        _ = try await client.get("challenged")

        let userinfo = "Userinfo-Pw-\(UUID().uuidString.prefix(8))"
        let withUser = "http://ada:\(userinfo)@127.0.0.1:\(server.port)/raw-headers"
        let sent = String(decoding: try await client.get(withUser), as: UTF8.self)
        let userBasic = Data("ada:\(userinfo)".utf8).base64EncodedString()

        let perRequest = "Per-Request-Token-\(UUID().uuidString.prefix(8))"
        _ = await Self.run(client, try client.request(method: .get, path: "raw-headers", headers: ["X-Auth-Token": perRequest]))

        let access = "Authenticator-Token-\(UUID().uuidString.prefix(8))"
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.monitorsReachability = false
        configuration.authenticator = BearerTokenAuthenticator(credential: .init(accessToken: access)) { _ in .init(accessToken: access) }
        let authenticated = HTTPClient(baseURL: server.baseURL, configuration: configuration)
        _ = try await authenticated.get("raw-headers")

        let text = capture.lines.joined(separator: "\n")
        Self.expectHidden(cookie, in: text, "the stored cookie")
        Self.expectHidden(password, in: text, "the challenge's password")
        Self.expectHidden(basic, in: text, "the challenge's Basic answer")
        Self.expectHidden(configured, in: text, "the default credential")
        Self.expectHidden(Data("eve:\(configured)".utf8).base64EncodedString(), in: text, "the default credential's Basic answer")
        #expect(sent.contains(userBasic), "URL user information went as Basic: \(sent)")
        Self.expectHidden(userBasic, in: text, "the Basic of URL user information")
        Self.expectHidden(userinfo, in: text, "the URL's password")
        Self.expectHidden(perRequest, in: text, "a per-request credential header")
        Self.expectHidden(access, in: text, "the authenticator's token")
        #expect(text.contains("rawHeaders"), "the echoes were logged: \(Self.excerpt(text, showing: nil))")
    }

    @Test(
        "A credential among the session's additional headers (added by the transport) never reaches the log",
        arguments: HTTPClient.TransportKind.testedKinds)
    func sessionAdditionalHeaders(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let key = "Session-Key-\(UUID().uuidString.prefix(8))"
        let client = testClient(server, transport) { configuration in
            let session = URLSessionConfiguration.default
            session.httpAdditionalHeaders = ["X-API-Key": key]
            configuration.sessionConfiguration = session
        }
        let capture = NetworkLoggerTests.Capture(level: .debug, port: server.port)
        let echoed = String(decoding: try await client.get("raw-headers"), as: UTF8.self)
        #expect(echoed.contains(key), "the header was sent: \(echoed)")
        Self.expectHidden(key, in: capture.lines.joined(separator: "\n"), "the log")
    }

    @Test(
        "A Basic password echoed percent-encoded, form-encoded, JSON- or HTML-escaped is masked",
        arguments: HTTPClient.TransportKind.testedKinds)
    func encodedForms(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let password = "p@ss:w/rd \"x\"&\(UUID().uuidString.prefix(6))"
        let strict = password.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let forms = [
            strict,  // p%40ss%3Aw%2Frd…
            Self.lowercasingEscapes(strict),  // %2f
            password.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed)!,
            password.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: " ")))!
                .replacingOccurrences(of: " ", with: "+"),
            password.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "/", with: "\\/"),
            password.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;"),
        ]
        server.route("/echo-encoded") { request in
            let header = String((request.headers["Authorization"] ?? "").dropFirst("Basic ".count))
            let pair = Data(base64Encoded: header).map { String(decoding: $0, as: UTF8.self) } ?? ""
            let sent = String(pair.drop { $0 != ":" }.dropFirst())
            let body = forms.enumerated().map { "form \($0.offset): [\($0.element)]" }.joined(separator: "\n")
            return .text(sent == password ? body : "wrong password \(sent)", status: 403)
        }
        let client = testClient(server, transport)
        let capture = NetworkLoggerTests.Capture(level: .debug, port: server.port)
        client.setAuthorizationHeader(username: "ada", password: password)
        var description = ""
        do { _ = try await client.get("echo-encoded") } catch { description = "\(error)" }
        let text = capture.lines.joined(separator: "\n")
        #expect(text.contains("form 5: [<redacted>]"), "\(Self.excerpt(text, showing: "form 5"))")
        for (index, form) in forms.enumerated() {
            #expect(!text.contains(form), "form \(index) \(form) in the log: \(Self.excerpt(text, showing: form))")
        }
        #expect(description.contains("form 0: [<redacted>]"), "\(description)")
        #expect(!description.contains(forms[0]), "\(description)")
    }

    @Test("A token across the log's body limit or the error preview's cut is hidden whole", arguments: HTTPClient.TransportKind.testedKinds)
    func maskBeforeCut(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let token = "Straddling-Token-\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(17))"
        #expect(token.count == 34)
        // 16 characters of the token before the 4,096-byte limit; 20 before the 120-character preview's.
        server.route("/long") { _ in .text(String(repeating: "x", count: 4096 - 16) + token + String(repeating: "y", count: 100)) }
        server.route("/denied") { _ in .text(String(repeating: "z", count: 100) + token + " and more", status: 403) }
        let client = testClient(server, transport)
        client.setAuthorizationHeader(token: token)
        let capture = NetworkLoggerTests.Capture(level: .debug, port: server.port)
        _ = try await client.get("long")
        var description = ""
        do { _ = try await client.get("denied") } catch { description = "\(error)" }
        let text = capture.lines.joined(separator: "\n")
        #expect(text.contains("truncated)"), "the body was cut: \(text.suffix(300))")
        Self.expectHidden(token, in: text, "the log")
        #expect(description.contains("zzzz"), "\(description)")
        Self.expectHidden(token, in: description, "the error's preview")
    }

    @Test(
        "300 requests with distinct secret query values do not push out a token a request in flight carries, nor a client's configured one",
        arguments: HTTPClient.TransportKind.testedKinds)
    func inUseIsNeverEvicted(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let arrived = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        server.route("/held") { request in
            arrived.signal()
            gate.wait()
            return .json(["rawHeaders": request.headers.flatMap { [$0.name, $0.value] }])
        }
        let client = testClient(server, transport)
        let configured = "Configured-Token-\(UUID().uuidString.prefix(8))"
        let configuredClient = testClient(server, transport)
        configuredClient.setAuthorizationHeader(token: configured)
        _ = try await configuredClient.get("get")
        let capture = NetworkLoggerTests.Capture(level: .debug, port: server.port)
        let inFlight = "In-Flight-Token-\(UUID().uuidString.prefix(8))"
        let held = client.operation(
            with: try client.request(method: .get, path: "held", headers: ["Authorization": "Bearer \(inFlight)"]), success: nil,
            failure: nil)
        let probe = CompletionProbe()
        probe.attach(to: held)
        client.enqueue(held)
        _ = try await offPool { arrived.wait() }
        for number in 0..<300 {
            _ = try await client.get("get", parameters: ["token": "distinct-secret-\(number)-\(UUID().uuidString.prefix(4))"])
        }
        gate.signal()
        _ = await probe.outcome()
        let text = capture.lines.joined(separator: "\n")
        #expect(text.contains("rawHeaders"), "the echo was logged")
        Self.expectHidden(inFlight, in: text, "the log")
        // The configured token, in text no request of this client carried lately.
        let error = ConveyorError.unacceptableStatusCode(
            403, response: HTTPURLResponse(url: server.baseURL, statusCode: 403, httpVersion: nil, headerFields: nil)!,
            data: Data("echo: \(configured)".utf8))
        Self.expectHidden(configured, in: "\(error)", "an error description")
    }
}

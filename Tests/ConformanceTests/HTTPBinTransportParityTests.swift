import Conveyor
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What both transports must do the same, checked against httpbin in one run: cookies,
/// content decoding, challenges, exact upload lengths, redirects that keep the body.
@Suite("Transport parity against httpbin (curl and URLSession)")
struct HTTPBinTransportParityTests {
    static var kinds: [HTTPClient.TransportKind] {
        #if os(Linux)
            [.curl, .urlSession]
        #else
            [.urlSession]
        #endif
    }

    /// A client with its own cookie storage, so tests running in parallel share no cookies.
    private func client(_ transport: HTTPClient.TransportKind) async throws -> (HTTPClient, HTTPCookieStorage) {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        let storage = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "conveyor-tests-\(UUID().uuidString)")
        let session = URLSessionConfiguration.default
        session.httpCookieStorage = storage
        configuration.sessionConfiguration = session
        return (HTTPClient(baseURL: try await HTTPBin.baseURL(), configuration: configuration), storage)
    }

    struct Cookies: Decodable, Sendable { let cookies: [String: String] }

    @Test("Set-Cookie is stored and sent back; Max-Age=0 and an expired date delete it", arguments: kinds)
    func cookies(transport: HTTPClient.TransportKind) async throws {
        let (client, storage) = try await client(transport)
        // /cookies/set answers 302 with Set-Cookie; the redirected GET must carry the cookie.
        let set = try await client.get("cookies/set", parameters: ["flavour": "oat", "size": "large"], as: Cookies.self)
        #expect(set.cookies == ["flavour": "oat", "size": "large"])
        #expect(Set(storage.cookies?.map(\.name) ?? []) == ["flavour", "size"])

        _ = try await client.get("response-headers", parameters: ["Set-Cookie": "flavour=gone; Max-Age=0; Path=/"])
        #expect(try await client.get("cookies", as: Cookies.self).cookies == ["size": "large"])

        let deleted = try await client.get("cookies/delete", parameters: ["size": ""], as: Cookies.self)
        #expect(deleted.cookies.isEmpty)
        #expect(storage.cookies?.isEmpty ?? true)

        // A positive Max-Age becomes the stored cookie's expiry.
        _ = try await client.get("response-headers", parameters: ["Set-Cookie": "keep=1; Max-Age=3600; Path=/"])
        let expiry = try #require(storage.cookies?.first { $0.name == "keep" }?.expiresDate)
        #expect(abs(expiry.timeIntervalSinceNow - 3600) < 60)
    }

    struct Decoded: Decodable, Sendable {
        let gzipped: Bool?
        let deflated: Bool?
        let brotli: Bool?
    }

    @Test("gzip, deflate and brotli bodies arrive decoded", arguments: kinds)
    func contentDecoding(transport: HTTPClient.TransportKind) async throws {
        let (client, _) = try await client(transport)
        #expect(try await client.get("gzip", as: Decoded.self).gzipped == true)
        #expect(try await client.get("deflate", as: Decoded.self).deflated == true)
        #expect(try await client.get("brotli", as: Decoded.self).brotli == true)
    }

    @Test("A Basic challenge is answered once with the credential; a wrong one fails, never hangs", arguments: kinds)
    func basicChallenge(transport: HTTPClient.TransportKind) async throws {
        let (client, _) = try await client(transport)
        client.defaultCredential = URLCredential(user: "ada", password: "lovelace", persistence: .none)
        #expect(try await client.response(method: .get, path: "basic-auth/ada/lovelace").statusCode == 200)
        client.defaultCredential = URLCredential(user: "ada", password: "wrong", persistence: .none)
        await #expect {
            try await client.get("basic-auth/ada/lovelace")
        } throws: { error in
            guard case .authenticationFailed(let response, _) = error as? ConveyorError else { return false }
            return response?.statusCode == 401
        }
    }

    @Test("A Digest challenge is answered with the credential (curl transport)")
    func digestChallenge() async throws {
        #if os(Linux)
            let (client, _) = try await client(.curl)
            client.defaultCredential = URLCredential(user: "ada", password: "lovelace", persistence: .none)
            #expect(try await client.response(method: .get, path: "digest-auth/auth/ada/lovelace").statusCode == 200)
            // A colon in a Digest user name stays in the user name (curl's user:password option
            // would have split it there).
            client.defaultCredential = URLCredential(user: "a:da", password: "love:lace", persistence: .none)
            #expect(try await client.response(method: .get, path: "digest-auth/auth/a:da/love:lace").statusCode == 200)
        #endif
    }

    struct Anything: Decodable, Sendable {
        let method: String
        let headers: [String: String]
        let files: [String: String]
        let form: [String: String]
        let url: String
    }

    @Test("A multipart upload from a file sends exactly its length; a 307 redirect keeps method and body", arguments: kinds)
    func uploadsAndRedirects(transport: HTTPClient.TransportKind) async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.multipartMemoryThreshold = 1_000  // the body goes through a file
        let client = HTTPClient(baseURL: try await HTTPBin.baseURL(), configuration: configuration)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-parity-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let text = String(repeating: "conveyor ", count: 20_000)
        try Data(text.utf8).write(to: file)
        let request = try client.multipartRequest(path: "anything", parameters: ["note": "parity"]) { form in
            try form.append(fileURL: file, name: "document")
        }
        let expectedLength = try #require(request.allHTTPHeaderFields?["Content-Length"])
        let upload = try await client.response(for: request, responseSerializer: DecodableResponseSerializer<Anything>())
        #expect(upload.value.method == "POST")
        #expect(upload.value.headers["Content-Length"] == expectedLength)
        #expect(upload.value.files["document"] == text)
        #expect(upload.value.form["note"] == "parity")

        let redirected = try await client.response(
            for: client.request(method: .post, path: "redirect-to?url=/anything&status_code=307", parameters: ["k": "v"]),
            responseSerializer: DecodableResponseSerializer<Anything>())
        #expect(redirected.value.url.hasSuffix("/anything"))
        #expect(redirected.value.method == "POST")
        #expect(redirected.value.form["k"] == "v")
    }
}

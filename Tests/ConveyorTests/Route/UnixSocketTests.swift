import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// Origins reached through a Unix domain socket: `http+unix` URLs and
/// `Configuration.unixSocketPath`, on the curl transport; a typed refusal on URLSession.
@Suite("Unix domain sockets: http+unix URLs and Configuration.unixSocketPath")
struct UnixSocketTests {
    /// A fresh socket path (short: a socket path has at most 107 bytes).
    static func socketPath() -> String { "/tmp/conveyor-\(UUID().uuidString.prefix(8)).sock" }

    @Test("Over an http+unix base URL: GET, POST, a retry, the cache and a stream all work (curl)")
    func everyKindOfRequest() async throws {
        let server = try LocalHTTPServer.started(unixSocketPath: Self.socketPath())
        defer { server.stop() }
        server.route("/flaky") { [unowned server] _ in
            server.requestCount(path: "/flaky") == 1 ? .text("busy", status: 503) : .text("ok")
        }
        #expect(server.baseURL.scheme == "http+unix")
        let client = testClient(server, .curl) {
            $0.cache = HTTPCache(diskCapacity: 0)
            $0.retryPolicy = RetryPolicy(maximumAttempts: 2, baseDelay: 0.01)
        }
        // A GET, answered over the socket with the Host libcurl sends for it.
        let get = try await client.response(method: .get, path: "get")
        #expect(get.statusCode == 200)
        #expect((get.data.jsonObject["headers"] as? [String: String])?["Host"] == "localhost")
        #expect(get.request.url?.scheme == "http+unix")
        // A POST with a body.
        let post = try await client.post("post", parameters: ["field": "value"]).jsonObject
        #expect((post["form"] as? [String: Any])?["field"] as? String == "value")
        // A retry after a 503.
        #expect(try await client.response(method: .get, path: "flaky").statusCode == 200)
        #expect(server.requestCount(path: "/flaky") == 2)
        // The cache: the second GET of a fresh response never reaches the server.
        _ = try await client.response(method: .get, path: "cache/60")
        let cached = try await client.response(method: .get, path: "cache/60")
        #expect(cached.statusCode == 200)
        #expect(server.requestCount(path: "/cache/60") == 1)
        // A stream, chunk by chunk.
        var received = Data()
        for try await chunk in try await client.stream("drip?numbytes=5&duration=0.05") { received.append(chunk) }
        #expect(received == Data("*****".utf8))
    }

    @Test("An outbox delivers its items over the socket (curl)")
    func outboxOverTheSocket() async throws {
        let server = try LocalHTTPServer.started(unixSocketPath: Self.socketPath())
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let client = testClient(server, .curl)
        var configuration = Outbox.Configuration.default
        configuration.baseDelay = 0.01
        let outbox = try client.outbox(directory: directory.url, configuration: configuration)
        let id = try await outbox.send(method: .post, path: "post", body: ["note": "over the socket"], requestSerializer: .json)
        let result = try #require(await ResultLog(outbox).first(1).first)
        #expect(result.id == id)
        guard case .succeeded(let response) = result.outcome else {
            Issue.record("\(result.outcome)")
            return
        }
        #expect(response.statusCode == 200)
        #expect(server.requestCount(path: "/post") == 1)
        outbox.settle()
    }

    @Test("Two sockets behind the same http://localhost form never share a connection (curl)")
    func socketsKeepTheirConnections() async throws {
        let first = try LocalHTTPServer.started(unixSocketPath: Self.socketPath())
        let second = try LocalHTTPServer.started(unixSocketPath: Self.socketPath())
        defer {
            first.stop()
            second.stop()
        }
        first.route("/who") { _ in .text("first") }
        second.route("/who") { _ in .text("second") }
        let client = testClient(baseURL: first.baseURL, .curl)
        for _ in 0..<2 {
            let one = try await client.response(method: .get, path: first.baseURL.appendingPathComponent("who").absoluteString)
            let two = try await client.response(method: .get, path: second.baseURL.appendingPathComponent("who").absoluteString)
            #expect(String(decoding: one.data, as: UTF8.self) == "first")
            #expect(String(decoding: two.data, as: UTF8.self) == "second")
        }
        // Kept alive per socket: one connection each for the four requests.
        #expect(first.acceptedConnectionCount == 1 && second.acceptedConnectionCount == 1)
    }

    @Test("Configuration.unixSocketPath sends http://localhost URLs over the socket (curl)")
    func configuredSocketPath() async throws {
        let path = Self.socketPath()
        let server = try LocalHTTPServer.started(unixSocketPath: path)
        defer { server.stop() }
        let client = testClient(baseURL: URL(string: "http://localhost/")!, .curl) { $0.unixSocketPath = path }
        let response = try await client.response(method: .get, path: "headers")
        #expect(response.statusCode == 200)
        #expect(server.requestCount(path: "/headers") == 1)
        #expect(client.reachabilityStatus == .unknown)
    }

    @Test("URLSession refuses a socket with a typed error, before anything is sent")
    func urlSessionRefuses() async throws {
        let path = Self.socketPath()
        let server = try LocalHTTPServer.started(unixSocketPath: path)
        defer { server.stop() }
        let byURL = testClient(server, .urlSession)
        let byConfiguration = testClient(baseURL: URL(string: "http://localhost/")!, .urlSession) { $0.unixSocketPath = path }
        for client in [byURL, byConfiguration] {
            await #expect {
                try await client.get("get")
            } throws: { error in
                guard case .routeFailed(.unsupportedByTransport(_, let transport)) = error as? ConveyorError else { return false }
                return transport == .urlSession
            }
        }
        var configuration = HTTPClient.Configuration()
        configuration.transport = .urlSession
        configuration.unixSocketPath = path
        #expect(throws: ConveyorError.self) { try configuration.validate() }
        configuration.transport = .curl
        try configuration.validate()
        #expect(server.receivedRequests.isEmpty)
    }

    @Test("A missing socket, a file that is not one, and an http+unix URL without a path are typed errors")
    func badSockets() async throws {
        let missing = Self.socketPath()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-not-a-socket-\(UUID().uuidString)")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        func reason(_ client: HTTPClient, _ path: String = "get") async -> ConveyorError.RouteFailureReason? {
            do {
                _ = try await client.get(path)
                return nil
            } catch {
                guard case .routeFailed(let reason) = error as? ConveyorError else { return nil }
                return reason
            }
        }
        let byURL = testClient(baseURL: try #require(HTTPClient.unixSocketURL(socketPath: missing)), .curl)
        #expect(await reason(byURL) == .socketNotFound(path: missing))
        let configured = testClient(baseURL: URL(string: "http://localhost/")!, .curl) { $0.unixSocketPath = file.path }
        #expect(await reason(configured) == .notASocket(path: file.path))
        #expect(await reason(byURL, "http+unix://relative.sock/get") == .invalidSocketURL("http+unix://relative.sock/get"))
    }

    @Test("A server on the network cannot redirect the client to a local socket", arguments: HTTPClient.TransportKind.testedKinds)
    func noRedirectIntoASocket(transport: HTTPClient.TransportKind) async throws {
        let socketServer = try LocalHTTPServer.started(unixSocketPath: Self.socketPath())
        let server = try LocalHTTPServer.started()
        defer {
            socketServer.stop()
            server.stop()
        }
        let target = socketServer.baseURL.appendingPathComponent("get").absoluteString
        server.route("/jump") { _ in LocalHTTPServer.Response(status: 302, headers: ["Location": target]) }
        await #expect {
            try await testClient(server, transport).get("jump")
        } throws: { error in
            guard case .redirectFailed(.invalidLocation) = error as? ConveyorError else { return false }
            return true
        }
        #expect(socketServer.receivedRequests.isEmpty)
    }

    @Test("The logger's curl command for an http+unix request uses --unix-socket")
    func curlCommand() throws {
        let url = try #require(HTTPClient.unixSocketURL(socketPath: "/run/my app.sock", path: "/v1/info?x=1"))
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        #expect(operation.cURLDescription.hasSuffix("--unix-socket '/run/my app.sock' 'http://localhost/v1/info?x=1'"))
    }

    @Test("A redirect within the socket's origin is followed (curl)")
    func redirectWithinTheSocket() async throws {
        let server = try LocalHTTPServer.started(unixSocketPath: Self.socketPath())
        defer { server.stop() }
        let response = try await testClient(server, .curl).response(method: .get, path: "redirect/2")
        #expect(response.statusCode == 200)
        #expect(response.request.url?.scheme == "http+unix" && response.request.url?.path == "/get")
    }
}

import Conveyor
import Foundation
import Testing

/// httpbin under gunicorn on a Unix domain socket: the curl transport reaches it through an
/// `http+unix` URL or `Configuration.unixSocketPath`; URLSession refuses with a typed error.
@Suite("httpbin on a Unix domain socket")
struct HTTPBinUnixSocketTests {
    private func client(baseURL: URL, _ transport: HTTPClient.TransportKind, socketPath: String? = nil) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = HTTPCache(diskCapacity: 0)
        configuration.monitorsReachability = false
        configuration.unixSocketPath = socketPath
        return HTTPClient(baseURL: baseURL, configuration: configuration)
    }

    struct Echo: Decodable, Sendable {
        let headers: [String: String]
        let args: [String: String]
    }

    @Test("GET, POST, the cache and a streamed body over the socket (curl)")
    func curlTransport() async throws {
        let baseURL = try await HTTPBin.unixSocketBaseURL()
        let client = client(baseURL: baseURL, .curl)
        let echo = try await client.get("get", parameters: ["q": "socket"], as: Echo.self)
        #expect(echo.args == ["q": "socket"])
        #expect(echo.headers["Host"] == "localhost")
        let post = try await client.response(method: .post, path: "post", parameters: ["field": "value"])
        #expect(post.statusCode == 200)
        #expect(String(decoding: post.data, as: UTF8.self).contains("\"field\": \"value\""))
        // /cache/60 is fresh for a minute: the second answer comes from the cache.
        let first = try await client.response(method: .get, path: "cache/60")
        let second = try await client.response(method: .get, path: "cache/60")
        #expect(first.data == second.data)
        #expect(second.metrics.responseSource == .cache)
        // /stream/3 sends three JSON lines as they are written.
        var lines: [String] = []
        for try await line in try await client.stream("stream/3").lines(maximumLength: 64 * 1024) { lines.append(line) }
        #expect(lines.count == 3)
    }

    @Test("Configuration.unixSocketPath reaches the same httpbin with an http://localhost base URL (curl)")
    func configuredPath() async throws {
        let socketURL = try await HTTPBin.unixSocketBaseURL()
        let path = try #require(socketURL.host)
        let client = client(baseURL: URL(string: "http://localhost/")!, .curl, socketPath: path)
        #expect(try await client.get("get", as: Echo.self).headers["Host"] == "localhost")
    }

    @Test("URLSession refuses the socket with routeFailed(.unsupportedByTransport)")
    func urlSessionRefuses() async throws {
        let client = client(baseURL: try await HTTPBin.unixSocketBaseURL(), .urlSession)
        await #expect {
            try await client.get("get")
        } throws: { error in
            guard case .routeFailed(.unsupportedByTransport(_, .urlSession)) = error as? ConveyorError else { return false }
            return true
        }
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// Every verb, callback and async, takes per-request headers; every async call reports upload
/// and download progress for any body.
@Suite("Per-request headers and progress on every verb")
struct VerbOptionsTests {
    private static func client(_ server: LocalHTTPServer, _ transport: HTTPClient.TransportKind) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.monitorsReachability = false
        let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
        client.setDefaultHeader("X-Default", value: "client")
        client.setDefaultHeader("X-Replaced", value: "client")
        return client
    }

    /// The headers the server received for the last request to `path`.
    private static func received(_ server: LocalHTTPServer, _ path: String) throws -> HTTPHeaders {
        try #require(server.receivedRequests.last { $0.path == path }).headers
    }

    @Test(
        "Async verbs send per-request headers beside the defaults, replacing those of the same name",
        arguments: HTTPClient.TransportKind.testedKinds)
    func asyncHeaders(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = Self.client(server, transport)
        let headers: HTTPHeaders = ["X-Request": "1", "x-replaced": "request"]
        struct Echo: Decodable, Sendable { let url: String }
        _ = try await client.get("get", headers: headers)
        _ = try await client.get("get", as: Echo.self, headers: headers)
        _ = try await client.head("get", headers: headers)
        _ = try await client.post("post", parameters: ["a": 1], headers: headers)
        _ = try await client.put("put", body: ["b": 2], headers: headers, requestSerializer: .json)
        _ = try await client.patch("patch", headers: headers)
        _ = try await client.delete("delete", headers: headers)
        _ = try await client.post("post", headers: headers, constructingBody: { $0.append("v", name: "f") })
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-verbs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try await client.download("bytes/10", headers: headers, to: .directory(directory))
        #expect(server.receivedRequests.count == 9)
        for request in server.receivedRequests {
            #expect(request.headers["X-Request"] == "1", "\(request)")
            #expect(request.headers["X-Replaced"] == "request", "\(request)")
            #expect(request.headers["X-Default"] == "client", "\(request)")
        }
    }

    @Test("Callback verbs send per-request headers", arguments: HTTPClient.TransportKind.testedKinds)
    func callbackHeaders(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = Self.client(server, transport)
        let headers: HTTPHeaders = ["X-Request": "2"]
        let probes = (0..<6).map { _ in CompletionProbe() }
        client.get("get", headers: headers, success: probes[0].success, failure: probes[0].failure)
        client.head("get", headers: headers, success: probes[1].success, failure: probes[1].failure)
        client.post("post", headers: headers, success: probes[2].success, failure: probes[2].failure)
        client.put("put", headers: headers, success: probes[3].success, failure: probes[3].failure)
        client.patch("patch", headers: headers, success: probes[4].success, failure: probes[4].failure)
        client.delete("delete", headers: headers, success: probes[5].success, failure: probes[5].failure)
        for probe in probes { #expect(await probe.outcome().error == nil) }
        #expect(server.receivedRequests.count == 6 && server.receivedRequests.allSatisfy { $0.headers["X-Request"] == "2" })
        #expect(try Self.received(server, "/get")["X-Default"] == "client")
    }

    @Test(
        "Async calls report upload progress for a plain body and download progress for any response",
        arguments: HTTPClient.TransportKind.testedKinds)
    func asyncProgress(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.maximumStoredBodySize = 4 << 20
        let client = Self.client(server, transport)
        let sent = Lock<(calls: Int, total: Int64)>((0, 0))
        let received = Lock<(calls: Int, total: Int64)>((0, 0))
        let payload = String(repeating: "x", count: 1_000_000)
        _ = try await client.post(
            "post", parameters: ["blob": payload],
            uploadProgress: { _, total, _ in sent.withLock { $0 = ($0.calls + 1, total) } },
            downloadProgress: { _, total, _ in received.withLock { $0 = ($0.calls + 1, total) } })
        let uploaded = sent.withLock { $0 }
        #expect(uploaded.calls > 0 && uploaded.total >= 1_000_000)
        #expect(received.withLock { $0.calls } > 0)

        let downloads = Lock<[Int64]>([])
        _ = try await client.get("bytes/300000", downloadProgress: { _, total, _ in downloads.withLock { $0.append(total) } })
        #expect(downloads.withLock { $0.last } == 300_000)
        let decoded = Lock<Int64>(0)
        struct Echo: Decodable, Sendable { let url: String }
        _ = try await client.get("get", as: Echo.self, downloadProgress: { _, total, _ in decoded.withLock { $0 = total } })
        #expect(decoded.withLock { $0 } > 0)
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// A 206 is a part of the resource, never the resource (issue #58, item 13): to a request that
/// carried no `Range` it is a typed error on both transports; to a caller's own `Range` it is
/// what was asked for.
@Suite("A 206 answering a request without Range", .timeLimit(.notAHang))
struct PartialContentWithoutRangeTests {
    /// The last 700 bytes of the range-fault body, as a 206 that says so.
    private static func tail(etag: String = LocalHTTPServer.rangeFaultETag) -> LocalHTTPServer.Response {
        let body = LocalHTTPServer.rangeFaultBody
        return .init(
            status: 206,
            headers: ["Content-Range": "bytes 500-\(body.count - 1)/\(body.count)", "ETag": etag, "Accept-Ranges": "bytes"],
            body: .data(body.suffix(from: 500)))
    }

    /// Whether `error` is the partial-answer error naming a 206.
    private static func isPartialAnswer(_ error: any Error) -> Bool {
        guard case .partialContentNotRequested(let response) = error as? ConveyorError else { return false }
        return response.statusCode == 206
    }

    @Test("A plain GET answered 206 fails typed, with the response", arguments: HTTPClient.TransportKind.testedKinds)
    func plainRequest(transport: HTTPClient.TransportKind) async throws {
        try await withServer { server, _ in
            server.route("/part") { _ in Self.tail() }
            let client = testClient(server, transport)
            await #expect {
                try await client.get("part")
            } throws: { error in
                Self.isPartialAnswer(error) && "\(error)".contains("206")
            }
            #expect(server.receivedRequests.first { $0.path == "/part" }?.headers["Range"] == nil)
        }
    }

    @Test(
        "A download restarted after a mismatched 206 fails typed when the whole request is answered 206 too, and leaves no file",
        arguments: HTTPClient.TransportKind.testedKinds)
    func restartAnsweredPartially(transport: HTTPClient.TransportKind) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-partial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server, _ in
            let calls = Lock(0)
            server.route("/restarts") { request in
                let call = calls.withLock {
                    $0 += 1
                    return $0
                }
                // 1: cut at 600; 2: the Range retry, answered from elsewhere; 3: the whole
                // request again, answered with a part anyway.
                return call < 3 ? .init(body: .fault(.rangeStartsElsewhere)) : Self.tail()
            }
            let client = testClient(server, transport) {
                $0.retryPolicy = RetryPolicy(maximumAttempts: 2, baseDelay: 0.01, maximumDelay: 0.02)
            }
            await #expect {
                try await client.download("restarts", to: .directory(directory))
            } throws: { error in
                Self.isPartialAnswer(error)
            }
            let ranges = server.receivedRequests.filter { $0.path == "/restarts" }.map { $0.headers["Range"] }
            #expect(ranges == [nil, "bytes=600-", nil], "\(ranges)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("A caller's own Range gets its 206 as the success it asked for", arguments: HTTPClient.TransportKind.testedKinds)
    func callersRange(transport: HTTPClient.TransportKind) async throws {
        try await withServer { server, _ in
            server.route("/part") { _ in Self.tail() }
            let client = testClient(server, transport)
            let operation = client.operation(
                with: try client.request(method: .get, path: "part", headers: ["Range": "bytes=500-"]), success: nil, failure: nil)
            operation.acceptableStatusCodes = [206]
            let probe = CompletionProbe()
            probe.attach(to: operation)
            client.enqueue(operation)
            let outcome = await probe.outcome()
            #expect(outcome.data == LocalHTTPServer.rangeFaultBody.suffix(from: 500), "\(String(describing: outcome.error))")
            #expect(operation.responseHead?.statusCode == 206)
        }
    }
}

import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(Glibc)
    import Glibc
#endif

/// What the independent attack on file bodies and resumed downloads found after issue 37's
/// fixes: each failed before its fix.
@Suite("File bodies and resumes: findings of the independent attack", .timeLimit(.notAHang))
struct BodyAttackTests {
    @Test(
        "A stream of the caller's with a Content-Length goes out with one framing and exactly its bytes (session 18 attack)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func callerStreamWithLength(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let body = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 % 251) })
        var request = try client.request(method: .post, path: "post")
        request.httpBodyStream = InputStream(data: body)
        request.setValue(String(body.count), forHTTPHeaderField: "Content-Length")
        _ = try await client.response(for: request, responseSerializer: DataResponseSerializer())
        let received = try #require(server.receivedRequests.last { $0.path == "/post" })
        let framings = ["Content-Length", "Transfer-Encoding"].filter { received.headers[$0] != nil }
        #expect(framings.count == 1, "framing fields sent: \(framings)")
        #expect(received.body == body)
    }

    @Test("A multipart part that is a FIFO without a writer, or a device, is refused when appended instead of blocking the caller")
    func multipartSpecialFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-mp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        for url in [fifo, URL(fileURLWithPath: "/dev/zero")] {
            let form = MultipartFormData()
            #expect {
                try form.append(fileURL: url, name: "file")
            } throws: { error in
                guard case .multipartEncodingFailed(.fileNotReadable(let named)) = error as? ConveyorError else { return false }
                return named == url
            }
        }
    }

    @Test(
        "A 206 without the ETag the kept bytes came with is not appended: the request starts over",
        arguments: HTTPClient.TransportKind.testedKinds)
    func withoutValidator(transport: HTTPClient.TransportKind) async throws {
        try await withServer { server, _ in
            let client = testClient(server, transport) {
                $0.retryPolicy = RetryPolicy(maximumAttempts: 2, baseDelay: 0.01, maximumDelay: 0.02)
            }
            let path = "fault/\(LocalHTTPServer.Fault.rangeWithoutValidator.rawValue)"
            do {
                let data = try await client.get(path)
                Issue.record("succeeded with \(data.count) bytes spliced from two answers")
            } catch let error as ConveyorError {
                #expect(error.connectivityFailure == .connectionLost, "\(error)")
            }
            let ranges = server.receivedRequests.filter { $0.path == "/\(path)" }.map { $0.headers["Range"] }
            #expect(ranges == [nil, "bytes=600-", nil], "\(ranges)")
        }
    }

    @Test(
        "A download resumed from a saved state is not continued by a 206 of another total, and the state records the total",
        arguments: HTTPClient.TransportKind.testedKinds)
    func savedStateTotal(transport: HTTPClient.TransportKind) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server, _ in
            let client = testClient(server, transport)
            let path = "fault/\(LocalHTTPServer.Fault.rangeOtherTotal.rawValue)"
            let request = try client.request(method: .get, path: path)
            let body = LocalHTTPServer.rangeFaultBody
            let partial = directory.appendingPathComponent("partial")
            try body.prefix(600).write(to: partial)
            let saved = FileDownloadOperation.ResumeState(
                url: try #require(request.url), validator: LocalHTTPServer.rangeFaultETag, bytesReceived: 600, partialFile: partial,
                totalBytes: Int64(body.count))
            // A state saved before the total was recorded still decodes.
            var object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(saved)) as? [String: Any])
            object["totalBytes"] = nil
            let old = try JSONDecoder().decode(
                FileDownloadOperation.ResumeState.self, from: JSONSerialization.data(withJSONObject: object))
            #expect(old.totalBytes == nil && old.bytesReceived == 600)

            let operation = FileDownloadOperation(request: request, resuming: saved, destination: .directory(directory))
            let probe = CompletionProbe()
            probe.attach(to: operation)
            client.enqueue(operation)
            // The 206 says 2,400 bytes: not the rest of a 1,200-byte file. Sent again whole, the
            // body is cut at 600 bytes: a typed failure, never success.
            let error = await probe.outcome().error
            #expect(error?.connectivityFailure == .connectionLost, "\(String(describing: error))")
            let ranges = server.receivedRequests.filter { $0.path == "/\(path)" }.map { $0.headers["Range"] }
            #expect(ranges == ["bytes=600-", nil], "\(ranges)")
        }
    }
}

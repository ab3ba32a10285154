import Conveyor
import ConveyorTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("A file as the request body")
struct BodyFileTests {
    /// `bytes` of a repeating pattern in a file named `name` in `directory`.
    static func file(_ name: String, bytes: Int, in directory: TemporaryDirectory) throws -> (URL, Data) {
        let data = FileDownloadTests.pattern(bytes)  // cheap: the cooperative pool runs this test
        let url = directory.url.appendingPathComponent(name)
        try data.write(to: url)
        return (url, data)
    }

    @Test(
        "Sent from disk with its exact Content-Length (not chunked), byte for byte, through both APIs; the file stays",
        arguments: HTTPClient.TransportKind.testedKinds)
    func sent(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/upload") { request in .text("received \(request.bodyLength)") }
        let directory = try TemporaryDirectory()
        let (url, data) = try Self.file("photo.png", bytes: 3 * 1024 * 1024 + 17, in: directory)
        let client = testClient(server, transport)

        let asyncRequest = try client.request(method: .put, path: "upload", bodyFile: url)
        let response = try await client.response(for: asyncRequest, responseSerializer: StringResponseSerializer())
        #expect(response.value == "received \(data.count)")

        let probe = CompletionProbe()
        let operation = client.operation(
            with: try client.request(path: "upload", bodyFile: url, headers: ["Content-Type": "application/x-custom"]), success: nil,
            failure: nil)
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)

        let received = server.receivedRequests
        #expect(received.map(\.method) == ["PUT", "POST"])
        for request in received {
            #expect(request.body == data && !request.wasChunked)
            #expect(request.headers["Content-Length"] == String(data.count))
        }
        #expect(received.first?.headers["Content-Type"] == "image/png")
        #expect(received.last?.headers["Content-Type"] == "application/x-custom")
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    @Test(
        "Bodies around the upload buffer's bounds (64 kB, 1 MiB) arrive byte for byte, from Data and from a file",
        arguments: HTTPClient.TransportKind.testedKinds)
    func uploadBufferBounds(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/upload") { request in .text("received \(request.bodyLength)") }
        let directory = try TemporaryDirectory()
        let client = testClient(server, transport)
        for size in [64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 1024 * 1024, 1024 * 1024 + 1, 2 * 1024 * 1024 + 3] {
            let (url, data) = try Self.file("body-\(size).bin", bytes: size, in: directory)
            var inMemory = try client.request(method: .post, path: "upload")
            inMemory.httpBody = data
            let fromFile = try client.request(path: "upload", bodyFile: url)
            for request in [inMemory, fromFile] {
                let response = try await client.response(for: request, responseSerializer: StringResponseSerializer())
                #expect(response.value == "received \(size)")
                #expect(server.receivedRequests.last?.body == data, "\(size) bytes")
            }
        }
    }

    @Test("Its body stream is the file to any reader: read directly, and sent by a plain URLSession; a file gone reports bodyFileFailed")
    func streamReadsTheFile() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/upload") { request in .text("received \(request.bodyLength)") }
        let directory = try TemporaryDirectory()
        let (url, data) = try Self.file("notes.txt", bytes: 300 * 1024 + 5, in: directory)
        let client = testClient(server, .curl)

        let stream = try #require(try client.request(path: "upload", bodyFile: url).httpBodyStream)
        stream.open()
        var read = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count <= 0 {
                #expect(count == 0)
                break
            }
            read.append(buffer, count: count)
        }
        stream.close()
        #expect(read == data)
        #expect(stream.streamStatus == .closed)

        // The request as built, handed to URLSession itself rather than to Conveyor.
        let (body, _) = try await URLSession.shared.data(for: try client.request(path: "upload", bodyFile: url))
        #expect(String(decoding: body, as: UTF8.self) == "received \(data.count)")
        #expect(server.receivedRequests.last?.body == data)

        let gone = try #require(try client.request(path: "upload", bodyFile: url).httpBodyStream)
        try FileManager.default.removeItem(at: url)
        gone.open()
        #expect(gone.streamStatus == .error)
        let goneError = gone.streamError as? ConveyorError
        #expect(goneError.map { if case .bodyFileFailed(.fileNotFound(url)) = $0 { true } else { false } } == true)
        #expect(gone.read(&buffer, maxLength: buffer.count) == -1)
    }

    @Test("A 307 redirect sends the file again from its start", arguments: HTTPClient.TransportKind.testedKinds)
    func redirected(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/old") { _ in .init(status: 307, headers: ["Location": "/new"]) }
        server.route("/new") { request in .text("received \(request.bodyLength)") }
        let directory = try TemporaryDirectory()
        let (url, data) = try Self.file("body", bytes: 200_000, in: directory)
        let client = testClient(server, transport)
        let response = try await client.response(
            for: try client.request(path: "old", bodyFile: url), responseSerializer: StringResponseSerializer())
        #expect(response.value == "received \(data.count)")
        #expect(server.receivedRequests.last { $0.path == "/new" }?.body == data)
        #expect(server.receivedRequests.first?.headers["Content-Type"] == "application/octet-stream")
    }

    @Test("Missing, a directory, not a file URL: bodyFileFailed naming the file, nothing sent")
    func badFiles() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let client = testClient(server, .curl)
        let missing = directory.url.appendingPathComponent("missing.bin")
        let web = URL(string: "http://example.com/file.bin")!
        let cases: [(URL, (ConveyorError.BodyFileFailureReason) -> Bool)] = [
            (missing, { if case .fileNotFound(missing) = $0 { true } else { false } }),
            (directory.url, { if case .fileIsDirectory = $0 { true } else { false } }),
            (web, { if case .notAFileURL(web) = $0 { true } else { false } }),
        ]
        for (url, matches) in cases {
            #expect {
                try client.request(path: "upload", bodyFile: url)
            } throws: { error in
                guard let error = error as? ConveyorError, case .bodyFileFailed(let reason) = error else { return false }
                return matches(reason) && error.description.contains(url.lastPathComponent)
            }
        }
        #expect(server.receivedRequests.isEmpty)
    }
}

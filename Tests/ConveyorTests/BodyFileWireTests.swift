import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// What a file body puts on the wire, seen by a raw socket server that counts every byte after
/// the announced body: exactly `Content-Length` bytes, or ``ConveyorError/bodyFileFailed(reason:)``.
@Suite("File bodies on the wire: exactly the announced length, or bodyFileFailed")
struct BodyFileWireTests {
    static func client(_ server: RecordingSocketServer, _ transport: HTTPClient.TransportKind) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.monitorsReachability = false
        return HTTPClient(baseURL: server.baseURL, configuration: configuration)
    }

    /// The body file failure sending `request` ends with; nil (and an issue) for anything else.
    static func failure(of request: URLRequest, on client: HTTPClient) async -> ConveyorError.BodyFileFailureReason? {
        do {
            let response = try await client.response(for: request, responseSerializer: DataResponseSerializer())
            Issue.record("sent, \(response.data.count) bytes back")
        } catch let error as ConveyorError {
            if case .bodyFileFailed(let reason) = error { return reason }
            Issue.record("failed otherwise: \(error)")
        } catch {
            Issue.record("failed otherwise: \(error)")
        }
        return nil
    }

    static func write(_ bytes: Int, to url: URL, seed: UInt8 = 0) throws -> Data {
        let data = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
        try data.write(to: url)
        return data
    }

    static func append(_ bytes: Int, to url: URL) throws {
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0x41, count: bytes))
        try handle.close()
    }

    @Test(
        "The body is the file's announced bytes under one Content-Length, unchunked, with nothing after it",
        arguments: HTTPClient.TransportKind.testedKinds)
    func exact(transport: HTTPClient.TransportKind) async throws {
        let server = try RecordingSocketServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let url = directory.url.appendingPathComponent("body.bin")
        let data = try Self.write(1024 * 1024 + 5, to: url)
        let client = Self.client(server, transport)
        let response = try await client.response(
            for: try client.request(method: .put, path: "upload", bodyFile: url), responseSerializer: StringResponseSerializer())
        #expect(response.value == "ok")
        let exchange = try #require(await server.exchanges(1).first)
        #expect(exchange.values(of: "Content-Length") == [String(data.count)])
        #expect(exchange.values(of: "Transfer-Encoding").isEmpty)
        #expect(exchange.complete && exchange.body == data)
        #expect(exchange.trailing == 0)
    }

    @Test(
        "A file that grew, shrank, was rewritten, replaced or deleted after the request was built fails before anything is sent",
        arguments: HTTPClient.TransportKind.testedKinds)
    func changedBeforeSending(transport: HTTPClient.TransportKind) async throws {
        let server = try RecordingSocketServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let client = Self.client(server, transport)
        let changes: [(String, (URL) throws -> Void, (ConveyorError.BodyFileFailureReason) -> Bool)] = [
            ("grew by 1 MiB", { try Self.append(1024 * 1024, to: $0) }, { if case .fileChanged = $0 { true } else { false } }),
            (
                "shrank", { url in try FileHandle(forWritingTo: url).truncate(atOffset: 1000) },
                { if case .fileChanged = $0 { true } else { false } }
            ),
            (
                "rewritten in place (same size, new modification time)",
                { url in
                    let handle = try FileHandle(forWritingTo: url)
                    try handle.write(contentsOf: Data(repeating: 0x42, count: 10))
                    try handle.close()
                    var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
                    #expect(utimensat(AT_FDCWD, url.path, &times, 0) == 0)
                }, { if case .fileChanged = $0 { true } else { false } }
            ),
            (
                "replaced by another file of the same size",
                { url in
                    try FileManager.default.removeItem(at: url)
                    _ = try Self.write(200_000, to: url, seed: 7)
                }, { if case .fileChanged = $0 { true } else { false } }
            ),
            ("deleted", { try FileManager.default.removeItem(at: $0) }, { if case .fileNotFound = $0 { true } else { false } }),
            (
                "replaced by a FIFO with no writer",
                { url in
                    try FileManager.default.removeItem(at: url)
                    #expect(mkfifo(url.path, 0o600) == 0)
                }, { if case .notARegularFile = $0 { true } else { false } }
            ),
        ]
        for (index, (name, change, matches)) in changes.enumerated() {
            let url = directory.url.appendingPathComponent("body-\(index).bin")
            _ = try Self.write(200_000, to: url)
            let request = try client.request(method: .put, path: "upload", bodyFile: url)
            try change(url)
            let reason = await Self.failure(of: request, on: client)
            #expect(reason.map(matches) == true, "\(name): \(String(describing: reason))")
            #expect(reason?.description.contains(url.lastPathComponent) == true, "\(name)")
        }
        #expect(server.acceptedConnections == 0)
        // The client is not stuck (a FIFO opened on the curl loop thread blocked every request).
        let url = directory.url.appendingPathComponent("fine.bin")
        let data = try Self.write(70_000, to: url)
        _ = try await client.response(for: try client.request(path: "upload", bodyFile: url), responseSerializer: DataResponseSerializer())
        #expect(await server.exchanges(1).first?.body == data)
    }

    @Test(
        "A file that grows or shrinks during the upload: never more than the announced bytes, cut before its last byte, bodyFileFailed",
        arguments: HTTPClient.TransportKind.testedKinds, ["grows", "shrinks"])
    func changedDuringUpload(transport: HTTPClient.TransportKind, change: String) async throws {
        let server = try RecordingSocketServer(holdsBody: true)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let url = directory.url.appendingPathComponent("big.bin")
        // Larger than the loopback socket buffers and libcurl's upload buffer together: when the
        // head has arrived and the body is held, most of the file is still unread.
        let length = 32 * 1024 * 1024
        try Data(repeating: 0x5A, count: length).write(to: url)
        let client = Self.client(server, transport)
        let request = try client.request(method: .put, path: "upload", bodyFile: url)
        let sending = Task { await Self.failure(of: request, on: client) }
        #expect(await server.waitForHead())
        if change == "grows" {
            try Self.append(4 * 1024 * 1024, to: url)
        } else {
            try FileHandle(forWritingTo: url).truncate(atOffset: UInt64(length / 2))
        }
        server.releaseBody()
        let reason = await sending.value
        #expect(reason.map { if case .fileChanged(url) = $0 { true } else { false } } == true, "\(String(describing: reason))")
        let exchange = try #require(await server.exchanges(1).first)
        #expect(!exchange.complete && exchange.body.count < length)
        #expect(exchange.trailing == 0)
    }

    @Test(
        "A FIFO, /dev/zero, /dev/urandom, a socket or a directory is refused when the request is built",
        arguments: HTTPClient.TransportKind.testedKinds)
    func notRegularFiles(transport: HTTPClient.TransportKind) async throws {
        let server = try RecordingSocketServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let client = Self.client(server, transport)
        let fifo = directory.url.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let socketURL = directory.url.appendingPathComponent("socket")
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(socketURL.path.utf8)
            raw.copyBytes(from: bytes.prefix(raw.count - 1))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        let devices = ["/dev/zero", "/dev/urandom"].map { URL(fileURLWithPath: $0) }
        for url in [fifo, socketURL] + devices {
            #expect {
                try client.request(path: "upload", bodyFile: url)
            } throws: { error in
                guard case .bodyFileFailed(.notARegularFile(url)) = error as? ConveyorError else { return false }
                return true
            }
        }
        #expect {
            try client.request(path: "upload", bodyFile: directory.url)
        } throws: { error in
            guard case .bodyFileFailed(.fileIsDirectory) = error as? ConveyorError else { return false }
            return true
        }
        #expect(server.acceptedConnections == 0)
    }

    @Test(
        "Transfer-Encoding beside the file's Content-Length, or a changed Content-Length, is refused: one framing on the wire",
        arguments: HTTPClient.TransportKind.testedKinds)
    func framing(transport: HTTPClient.TransportKind) async throws {
        let server = try RecordingSocketServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let url = directory.url.appendingPathComponent("body.bin")
        _ = try Self.write(100_000, to: url)
        let client = Self.client(server, transport)
        #expect {
            try client.request(path: "upload", bodyFile: url, headers: ["Transfer-Encoding": "chunked"])
        } throws: { error in
            guard case .bodyFileFailed(.framingConflict(url, field: "Transfer-Encoding")) = error as? ConveyorError else { return false }
            return true
        }
        var chunked = try client.request(path: "upload", bodyFile: url)
        chunked.setValue("chunked", forHTTPHeaderField: "transfer-encoding")
        let chunkedReason = await Self.failure(of: chunked, on: client)
        #expect(chunkedReason.map { if case .framingConflict(url, field: "Transfer-Encoding") = $0 { true } else { false } } == true)
        var longer = try client.request(path: "upload", bodyFile: url)
        longer.setValue("100001", forHTTPHeaderField: "Content-Length")
        let longerReason = await Self.failure(of: longer, on: client)
        #expect(longerReason.map { if case .framingConflict(url, field: "Content-Length") = $0 { true } else { false } } == true)
        #expect(server.acceptedConnections == 0)
    }

    @Test(
        "A Basic challenge answered with the client's credential sends the whole file again",
        arguments: HTTPClient.TransportKind.testedKinds)
    func challenged(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let url = directory.url.appendingPathComponent("body.bin")
        let data = try Self.write(300_000, to: url)
        let client = testClient(server, transport)
        client.defaultCredential = URLCredential(user: "user", password: "passwd", persistence: .none)
        _ = try await client.response(
            for: try client.request(method: .put, path: "basic-auth/user/passwd", bodyFile: url),
            responseSerializer: DataResponseSerializer())
        let authorized = try #require(server.receivedRequests.last { $0.headers["Authorization"] != nil })
        #expect(authorized.body == data && !authorized.wasChunked)
    }
}

/// Upload progress in steps of at most 64 KiB on both transports.
@Suite("Upload progress granularity")
struct UploadProgressStepTests {
    final class Steps: Sendable {
        private let storage = Lock<[(Int64, Int64, Int64)]>([])
        func add(_ bytes: Int64, _ total: Int64, _ expected: Int64) { storage.withLock { $0.append((bytes, total, expected)) } }
        var values: [(Int64, Int64, Int64)] { storage.withLock { $0 } }
    }

    @Test(
        "A 300 kB multipart body and a 300 kB body file report progress at least every 64 KiB, ending at the total",
        arguments: HTTPClient.TransportKind.testedKinds)
    func steps(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/upload") { request in .text("received \(request.bodyLength)") }
        let directory = try TemporaryDirectory()
        let url = directory.url.appendingPathComponent("body.bin")
        try Data(repeating: 7, count: 300_000).write(to: url)
        let client = testClient(server, transport)
        let multipart = try client.multipartRequest(path: "upload") { form in
            form.append(data: Data(repeating: 3, count: 300_000), name: "file", fileName: "f.bin", mimeType: "application/octet-stream")
        }
        for request in [multipart, try client.request(path: "upload", bodyFile: url)] {
            let steps = Steps()
            let probe = CompletionProbe()
            let operation = client.operation(with: request, success: nil, failure: nil)
            probe.attach(to: operation)
            operation.setUploadProgressBlock { steps.add($0, $1, $2) }
            client.enqueue(operation)
            #expect(await probe.outcome().error == nil)
            let values = steps.values
            let length = Int64(request.value(forHTTPHeaderField: "Content-Length") ?? "") ?? -1
            #expect(values.count >= 5)
            #expect(values.allSatisfy { $0.0 > 0 && $0.0 <= 64 * 1024 && $0.2 == length }, "\(values.map(\.0))")
            #expect(values.last?.1 == length)
        }
    }
}

@Suite("Temporary multipart body files")
struct TemporaryMultipartFileTests {
    @Test("A multipart request over the memory threshold that is built and never sent removes its file when it goes away")
    func unsentRequestRemovesItsFile() throws {
        let scratch = try TemporaryDirectory()
        var configuration = HTTPClient.Configuration.default
        configuration.multipartMemoryThreshold = 1000
        configuration.temporaryDirectory = scratch.url
        configuration.monitorsReachability = false
        let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!, configuration: configuration)
        func files() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: scratch.url.path)) ?? [] }
        do {
            let request = try client.multipartRequest(path: "upload") { form in
                form.append(data: Data(repeating: 1, count: 5000), name: "file", fileName: "f.bin", mimeType: "application/octet-stream")
            }
            var copy = request
            copy.setValue("x", forHTTPHeaderField: "X-Copy")
            #expect(files().count == 1)
            #expect(copy.httpBodyStream != nil)
        }
        #expect(files().isEmpty)
        do {
            _ = try client.multipartRequest(path: "upload") { form in
                form.throttleBandwidth(packetSize: 1000, delay: 0.01)
                form.append(data: Data(repeating: 1, count: 5000), name: "file", fileName: "f.bin", mimeType: "application/octet-stream")
            }
        }
        #expect(files().isEmpty)
    }
}

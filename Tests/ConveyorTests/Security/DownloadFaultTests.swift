import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// Faults on the caller's side of a transfer: the disk and the files.
@Suite("Fault injection: disks and files")
struct DownloadFaultTests {
    /// How many cases this suite adds to the fault-injection count.
    static let count = 4

    func client(_ server: LocalHTTPServer, scratch: URL) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.temporaryDirectory = scratch
        configuration.cache = nil
        configuration.monitorsReachability = false
        return HTTPClient(baseURL: server.baseURL, configuration: configuration)
    }

    func scratchDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Downloads `path` onto a 512 kB tmpfs (read-only if asked) and returns the error.
    func downloadOntoSmallDisk(_ path: String, readOnly: Bool) async throws -> (ConveyorError?, leftOver: [String]) {
        let disk = try SmallDisk(kilobytes: 512, readOnly: readOnly)
        defer { withExtendedLifetime(disk) {} }
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let scratch = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        do {
            _ = try await client(server, scratch: scratch).download(path, to: .directory(disk.url))
            return (nil, [])
        } catch {
            return (error as? ConveyorError, try FileManager.default.contentsOfDirectory(atPath: disk.url.path))
        }
    }

    @Test("A download onto a full disk fails with writeFailed and leaves no partial file")
    func fullDisk() async throws {
        let (error, leftOver) = try await downloadOntoSmallDisk("bytes/2000000", readOnly: false)
        guard case .downloadFailed(.writeFailed) = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        #expect(leftOver.isEmpty)
    }

    @Test("A download into a read-only file system fails with cannotCreateFile")
    func readOnlyDisk() async throws {
        let (error, _) = try await downloadOntoSmallDisk("bytes/1000", readOnly: true)
        guard case .downloadFailed(.cannotCreateFile) = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
    }

    @Test("An existing destination is kept unless removePreviousFile is set")
    func existingDestination() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let scratch = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let target = scratch.appendingPathComponent("kept.bin")
        try Data("mine".utf8).write(to: target)
        await #expect {
            try await client(server, scratch: scratch).download("bytes/100", to: .file(target), options: [])
        } throws: { error in
            if case .downloadFailed(.destinationExists) = error as? ConveyorError { true } else { false }
        }
        #expect(try Data(contentsOf: target) == Data("mine".utf8))
    }

    @Test("A multipart source file deleted after the request was built: the body was already taken, nothing is lost")
    func sourceFileDisappears() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.maximumStoredBodySize = 8 << 20
        let scratch = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let source = scratch.appendingPathComponent("vanishing.bin")
        // A 251-byte pattern (a prime length, not a divisor of any buffer size) repeated: a lost,
        // repeated or shifted stretch shows. Built by appending, cheap in a debug build.
        let pattern = Data((0..<251).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) })
        var bytes = Data(capacity: 3_000_000)
        while bytes.count < 3_000_000 { bytes.append(pattern) }
        let expected = bytes
        try expected.write(to: source)
        var configuration = HTTPClient.Configuration.default
        configuration.multipartMemoryThreshold = 1_000_000  // streamed through a body file
        configuration.temporaryDirectory = scratch
        configuration.cache = nil
        let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
        let request = try client.multipartRequest(path: "upload-target") { try $0.append(fileURL: source, name: "file") }
        try FileManager.default.removeItem(at: source)
        let received = Lock<Data?>(nil)
        server.route("/upload-target") { request in
            // The only part's bytes start after its head's blank line (no multipart parse of
            // 3 MB in a debug build on a loaded machine).
            let body = request.body
            let start = body.range(of: Data("\r\n\r\n".utf8))?.upperBound ?? body.endIndex
            received.withLock { $0 = body[start...].prefix(expected.count) }
            return .text("\(request.bodyLength)")
        }
        let response = try await client.response(for: request, responseSerializer: DataResponseSerializer())
        #expect(Int(String(decoding: response.data, as: UTF8.self)) == Int(request.value(forHTTPHeaderField: "Content-Length") ?? ""))
        // Every byte of the file, in order, reached the server.
        #expect(received.withLock { $0 } == expected)
        #expect(await client.waitUntilAllOperationsAreFinished(timeout: 60))  // not a hang: the response is in
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty, "the body file was not removed")
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@Suite("Multipart bodies, in memory and streamed from disk")
struct MultipartTests {
    /// A private temporary directory per test, so parallel tests cannot see each other's files.
    final class Scratch: Sendable {
        let url: URL
        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-tests-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(at: url) }
        func file(_ name: String, bytes: Int, seed: UInt8 = 7) throws -> (URL, Data) {
            // A 64 kB pseudo-random block, repeated with a varying first byte: cheap to build in
            // a debug build, and no two blocks alike, so a misplaced block would be noticed.
            let block = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ ($0 >> 8)) })
            var data = Data(capacity: bytes)
            var index = 0
            while data.count < bytes {
                var next = block.prefix(bytes - data.count)
                next[next.startIndex] = UInt8(truncatingIfNeeded: index)
                data.append(next)
                index += 1
            }
            let url = url.appendingPathComponent(name)
            try data.write(to: url)
            return (url, data)
        }
        var leftoverBodies: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: url.appendingPathComponent("bodies").path)) ?? [])
        }
    }

    func configuration(threshold: Int64, scratch: Scratch) throws -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration.default
        configuration.multipartMemoryThreshold = threshold
        configuration.temporaryDirectory = scratch.url.appendingPathComponent("bodies")
        try FileManager.default.createDirectory(at: configuration.temporaryDirectory, withIntermediateDirectories: true)
        return configuration
    }

    @Test("Wire format: fields then parts, exact Content-Length, parseable by a strict parser", arguments: [Int64(10_000_000), 0])
    func wireFormat(threshold: Int64) async throws {
        let scratch = try Scratch()
        try await withServer(configuration: configuration(threshold: threshold, scratch: scratch)) { server, client in
            let (fileURL, fileData) = try scratch.file("photo.png", bytes: 3000)
            _ = try await client.post(
                "post", parameters: ["album": "2026", "tags": ["a", "b"]],
                constructingBody: { form in
                    try form.append(fileURL: fileURL, name: "photo")
                    form.append("A caption ✓", name: "caption")
                    form.append(data: Data([0, 1, 2]), name: "raw", fileName: "raw.bin", mimeType: "application/octet-stream")
                })
            let received = try #require(server.receivedRequests.last)
            #expect(received.headers["Content-Length"] == String(received.body.count))
            #expect(!received.wasChunked)
            let parts = try received.multipartParts()
            #expect(parts.map(\.name) == ["album", "tags[]", "tags[]", "photo", "caption", "raw"])
            #expect(parts[3].fileName == "photo.png" && parts[3].headers["Content-Type"] == "image/png")
            #expect(parts[3].body == fileData)
            #expect(String(decoding: parts[4].body, as: UTF8.self) == "A caption ✓")
            #expect(parts[5].body == Data([0, 1, 2]))
            #expect(received.bodyText.hasSuffix("--\r\n"))
            #expect(scratch.leftoverBodies.isEmpty)
        }
    }

    @Test("Quotes and CR/LF in names and file names cannot inject headers")
    func injection() throws {
        let form = MultipartFormData(boundary: "b")
        form.append(data: Data("x".utf8), name: "a\"b", fileName: "evil\r\nX-Injected: 1.txt", mimeType: "text/plain\r\nX-Other: 2")
        let text = String(decoding: try form.encode(), as: UTF8.self)
        #expect(text.contains(#"name="a%22b"; filename="evil%0D%0AX-Injected: 1.txt""#))
        #expect(!text.contains("\r\nX-Injected") && !text.contains("\r\nX-Other"))
        let parts = try MultipartParser.parse(try form.encode(), boundary: "b")
        #expect(parts.count == 1 && parts[0].headers.count == 2)
    }

    @Test("A 50 MB file part arrives byte for byte from a temporary body file, which is then removed")
    func largeFile() async throws {
        let scratch = try Scratch()
        try await withServer(configuration: configuration(threshold: 10_000_000, scratch: scratch)) { server, client in
            let (fileURL, fileData) = try scratch.file("big.bin", bytes: 50_000_000)
            let progress = Counter()
            let lastTotal = LastValue()
            _ = try await client.post(
                "post",
                constructingBody: { form in
                    try form.append(fileURL: fileURL, name: "file")
                },
                uploadProgress: { _, total, expected in
                    progress.increment()
                    lastTotal.set(total, expected)
                })
            let received = try #require(server.receivedRequests.last)
            #expect(Int(received.headers["Content-Length"] ?? "") == received.bodyLength)
            let whole = try await offPool { try received.multipartParts().map(\.body) == [fileData] }
            #expect(whole)
            #expect(progress.count > 1)
            #expect(lastTotal.value.0 == Int64(received.bodyLength) && lastTotal.value.1 == Int64(received.bodyLength))
            #expect(scratch.leftoverBodies.isEmpty)
        }
    }

    @Test("No temporary body file remains after a failure or a cancellation", arguments: ["failure", "cancel"])
    func cleanup(outcome: String) async throws {
        let scratch = try Scratch()
        try await withServer(configuration: configuration(threshold: 0, scratch: scratch)) { server, client in
            let (fileURL, _) = try scratch.file("f.bin", bytes: 100_000)
            let probe = CompletionProbe()
            let path = outcome == "failure" ? "status/500" : "post"
            // Suspended so the body file can be seen before the operation runs and ends.
            client.operationQueue.isSuspended = true
            let operation = client.post(
                path, constructingBody: { try $0.append(fileURL: fileURL, name: "f") },
                success: probe.success, failure: probe.failure)
            #expect(scratch.leftoverBodies.count == 1)
            if outcome == "cancel" { operation.cancel() }
            client.operationQueue.isSuspended = false
            let error = try #require(await probe.outcome().error)
            #expect(outcome == "cancel" ? error.isCancelled : error.statusCode == 500)
            #expect(scratch.leftoverBodies.isEmpty)
        }
    }

    @Test("Missing, directory, unreadable and non-file URLs fail naming the file, before anything is sent")
    func badFiles() async throws {
        let scratch = try Scratch()
        try await withServer { server, client in
            let missing = scratch.url.appendingPathComponent("missing.txt")
            let cases: [(URL, (ConveyorError.MultipartEncodingFailureReason) -> Bool)] = [
                (missing, { if case .fileNotFound(let url) = $0 { url == missing } else { false } }),
                (scratch.url, { if case .fileIsDirectory = $0 { true } else { false } }),
                (URL(string: "http://example.com/file.txt")!, { if case .notAFileURL = $0 { true } else { false } }),
            ]
            for (url, matches) in cases {
                await #expect {
                    try await client.post("post", constructingBody: { try $0.append(fileURL: url, name: "f") })
                } throws: { error in
                    guard case .multipartEncodingFailed(let reason) = error as? ConveyorError else { return false }
                    return matches(reason) && (error as? ConveyorError)?.description.contains(url.lastPathComponent) == true
                }
            }
            #expect(server.receivedRequests.isEmpty)
        }
    }

    @Test("A stream part is read when encoding; a short stream fails instead of lying about the length")
    func streams() throws {
        let form = MultipartFormData(boundary: "s")
        form.append(stream: InputStream(data: Data("hello".utf8)), length: 5, name: "s", fileName: "s.txt", mimeType: "text/plain")
        #expect(try MultipartParser.parse(try form.encode(), boundary: "s").first?.body == Data("hello".utf8))
        let short = MultipartFormData(boundary: "s")
        short.append(stream: InputStream(data: Data("hi".utf8)), length: 5, name: "s", fileName: "s.txt", mimeType: "text/plain")
        #expect(throws: ConveyorError.self) { try short.encode() }
    }

    @Test("contentLength matches the encoded size, and MIME types come from the extension")
    func lengthsAndTypes() throws {
        let form = MultipartFormData()
        form.append("v", name: "k")
        form.append(data: Data(count: 1234), name: "d", fileName: "d.pdf", mimeType: MIMEType.forPath("d.pdf"))
        #expect(form.contentLength == Int64(try form.encode().count))
        #expect(MIMEType.forPath("a/b/photo.JPG") == "image/jpeg")
        #expect(MIMEType.forPath("archive.unknownext") == "application/octet-stream")
        #expect(MIMEType.byExtension.count >= 100)
    }

    @Test("throttleBandwidth sends the body in delayed packets, whole, from memory and from disk", arguments: [Int64(10_000_000), 0])
    func throttled(threshold: Int64) async throws {
        let scratch = try Scratch()
        try await withServer(configuration: configuration(threshold: threshold, scratch: scratch)) { server, client in
            let (fileURL, fileData) = try scratch.file("t.bin", bytes: 64 * 1024)
            let start = ContinuousClock.now
            let elapsed = await withCheckedContinuation { continuation in
                client.post(
                    "post",
                    constructingBody: { form in
                        try form.append(fileURL: fileURL, name: "t")
                        form.throttleBandwidth(packetSize: 16 * 1024, delay: 0.1)
                    }, success: { _, _ in continuation.resume(returning: ContinuousClock.now - start) },
                    failure: { _, error in
                        Issue.record("\(error)")
                        continuation.resume(returning: .zero)
                    })
            }
            // 64 kB plus headers in 16 kB packets: at least 4 delays of 0.1 s.
            #expect(elapsed >= .milliseconds(400))
            #expect(try server.receivedRequests.last?.multipartParts().first?.body == fileData)
            #expect(scratch.leftoverBodies.isEmpty)
        }
    }

    @Test("Upload progress is reported for a plain form POST too")
    func plainUploadProgress() async throws {
        try await withServer { _, client in
            let probe = CompletionProbe()
            let last = LastValue()
            let operation = client.operation(
                with: try client.request(method: .post, path: "post", parameters: ["big": String(repeating: "x", count: 200_000)]),
                success: nil, failure: nil)
            probe.attach(to: operation)
            operation.setUploadProgressBlock { _, total, expected in last.set(total, expected) }
            client.enqueue(operation)
            _ = await probe.outcome()
            #expect(last.value.0 == Int64(operation.request.httpBody?.count ?? -1))
        }
    }
}

/// The last (total, expected) pair a progress block reported.
final class LastValue: Sendable {
    private let storage = Lock((Int64(-1), Int64(-1)))
    func set(_ total: Int64, _ expected: Int64) { storage.withLock { $0 = (total, expected) } }
    var value: (Int64, Int64) { storage.withLock { $0 } }
}

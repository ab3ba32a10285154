import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// `HTTPRequestOperation.outputStream`, AFNetworking's way of sending a body somewhere other
/// than memory, over real sockets on both transports.
@Suite("outputStream: bodies written to a stream as they arrive")
struct OutputStreamTests {
    private static func temporaryFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-stream-\(UUID().uuidString)")
    }

    @Test(
        "A 3 MB body goes to a file stream, not memory; progress fires; the stream is closed",
        arguments: HTTPClient.TransportKind.testedKinds)
    func fileStream(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let body = FileDownloadTests.pattern(3_000_000)
        server.route("/big") { _ in .init(headers: ["Content-Type": "application/octet-stream"], body: .data(body)) }
        let client = testClient(server, transport)
        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let stream = try #require(OutputStream(toFileAtPath: file.path, append: false))
        let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("big")))
        operation.outputStream = stream
        let progressed = Lock<Int64>(0)
        operation.setDownloadProgressBlock { _, total, _ in progressed.withLock { $0 = max($0, total) } }
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
        #expect(try Data(contentsOf: file) == body)
        #expect(operation.responseData == Data())
        #expect(stream.streamStatus == .closed)
        probe.queue.sync {}
        #expect(progressed.withLock { $0 } == Int64(body.count))
        #expect(await probe.settledCallCount == 1)
    }

    @Test(
        "A stream the caller opened is closed however the operation ends: cancelled before it starts, or before the head",
        arguments: HTTPClient.TransportKind.testedKinds)
    func callerOpenedStreamClosed(transport: HTTPClient.TransportKind) async throws {
        // Found by the independent attack: only a stream the operation had opened was closed.
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let headAsked = AsyncStream.makeStream(of: Void.self)
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        server.route("/held") { _ in
            headAsked.continuation.yield()
            // Held on the server's connection thread until the test is over; 60 s only ends a
            // hang (at 10 s a loaded machine's late cancel could meet the answer instead).
            _ = release.wait(timeout: .now() + 60)
            return .text("late")
        }
        let client = testClient(server, transport)
        for cancelsInFlight in [false, true] {
            let file = Self.temporaryFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let stream = try #require(OutputStream(toFileAtPath: file.path, append: false))
            stream.open()
            let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("held")))
            operation.outputStream = stream
            let probe = CompletionProbe()
            probe.attach(to: operation)
            if cancelsInFlight {
                client.enqueue(operation)
                for await _ in headAsked.stream { break }
                operation.cancel()
            } else {
                operation.cancel()
                client.enqueue(operation)
            }
            #expect(await probe.outcome().error?.isCancelled == true)
            #expect(stream.streamStatus == .closed, "cancelled \(cancelsInFlight ? "in flight" : "before it started")")
        }
    }

    @Test("A memory stream keeps the body; the JSON serializer reads it", arguments: HTTPClient.TransportKind.testedKinds)
    func memoryStream(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let operation = client.operation(
            JSONRequestOperation.self, with: try client.request(method: .get, path: "get", parameters: ["q": "stream"]))
        let stream = OutputStream.toMemory()
        operation.outputStream = stream
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
        let json = try #require(operation.responseObject as? [String: Any])
        #expect((json["args"] as? [String: Any])?["q"] as? String == "stream")
        #expect(operation.responseData == stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data)
        #expect(operation.responseString?.contains("stream") == true)
    }

    @Test("An error status keeps its body in memory for the error and writes nothing", arguments: HTTPClient.TransportKind.testedKinds)
    func errorBodyStaysInMemory(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/missing") { _ in .text("no such thing", status: 404) }
        let client = testClient(server, transport)
        let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("missing")))
        let stream = OutputStream.toMemory()
        operation.outputStream = stream
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let error = try #require(await probe.outcome().error)
        #expect(error.statusCode == 404 && error.responseData == Data("no such thing".utf8))
        #expect((stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data ?? Data()).isEmpty)
    }

    @Test(
        "A stream that cannot be opened fails the operation once with outputStreamFailed", arguments: HTTPClient.TransportKind.testedKinds)
    func unopenable(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("bytes/1000")))
        operation.outputStream = OutputStream(toFileAtPath: "/nonexistent-\(UUID().uuidString)/out.bin", append: false)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        guard case .outputStreamFailed(.cannotOpen(let underlying))? = await probe.outcome().error else {
            Issue.record("expected outputStreamFailed(.cannotOpen)")
            return
        }
        #expect((underlying as? NSError)?.code == Int(ENOENT))
        #expect(await probe.settledCallCount == 1)
    }

    @Test(
        "A full disk (/dev/full) fails the operation before the body ends, with the stream's error, once",
        arguments: HTTPClient.TransportKind.testedKinds)
    func fullDisk(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        // The body's first 100 bytes, then nothing until the client closes the connection; after
        // 60 s without a close the server gives up and ends it. The failure must not wait for that.
        let serverGaveUp = Lock(false)
        server.route("/first-part") { _ in
            .init(
                headers: ["Content-Length": "200"],
                body: .stream(chunked: false) { writer in
                    try writer.write(Data(repeating: 7, count: 100))
                    if !writer.waitForClientToClose(timeout: 60) { serverGaveUp.withLock { $0 = true } }
                })
        }
        let client = testClient(server, transport)
        let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("first-part")))
        operation.outputStream = OutputStream(toFileAtPath: "/dev/full", append: false)
        let probe = CompletionProbe()
        let gaveUpWhenFailed = Lock<Bool?>(nil)
        operation.callbackQueue = probe.queue
        operation.setCompletionBlock(
            success: probe.success,
            failure: { operation, error in
                gaveUpWhenFailed.withLock { $0 = serverGaveUp.withLock { $0 } }
                probe.failure(operation, error)
            })
        client.enqueue(operation)
        let error = await probe.outcome().error
        guard case .outputStreamFailed(.writeFailed(let written, let underlying))? = error else {
            Issue.record("expected outputStreamFailed(.writeFailed), got \(String(describing: error))")
            return
        }
        #expect(written == 0 && (underlying as? NSError)?.code == Int(ENOSPC))
        // "At once" as an order of events: the failure came before the server gave up waiting
        // with the rest of the body (only the client's close spares it the 60 s).
        #expect(gaveUpWhenFailed.withLock { $0 } == false)
        #expect(error?.description.contains("Output stream failed") == true)
        #expect(await probe.settledCallCount == 1)
    }

    @Test(
        "A stream closed mid-body fails the operation; every byte it took stays in the file",
        arguments: HTTPClient.TransportKind.testedKinds)
    func closedMidBody(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let stream = try #require(OutputStream(toFileAtPath: file.path, append: false))
        let operation = HTTPRequestOperation(
            request: URLRequest(url: URL(string: "drip?numbytes=50&duration=5", relativeTo: server.baseURL)!))
        operation.outputStream = stream
        let closed = Lock(false)
        // Closed once, from the callback queue, while the transport writes from its own thread:
        // OutputStream is not Sendable, but this is the very misuse under test.
        nonisolated(unsafe) let streamToClose = stream
        // The progress block runs after a chunk was written: closing then refuses the next one.
        operation.setDownloadProgressBlock { _, _, _ in
            closed.withLock { done in
                if !done { streamToClose.close() }
                done = true
            }
        }
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        guard case .outputStreamFailed(.writeFailed(let written, _))? = await probe.outcome().error else {
            Issue.record("expected outputStreamFailed(.writeFailed)")
            return
        }
        #expect(written > 0 && written < 50)
        #expect(try Data(contentsOf: file).count == Int(written))
        #expect(await probe.settledCallCount == 1)
    }

    /// Streams PauseResumeTests' resource into a file, pauses after its first part, changes the
    /// resource's version if asked (so If-Range no longer matches and the server answers 200),
    /// resumes, and returns the outcome and the file's bytes.
    private static func pauseAndResume(
        transport: HTTPClient.TransportKind, append: Bool, changingResource: Bool = false
    ) async throws -> (operation: HTTPRequestOperation, outcome: Outcome, file: Data) {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let gate = DispatchSemaphore(value: 0)
        defer { gate.signal() }
        let version = Lock(1)
        PauseResumeTests.route(server, etag: { "\"v\(version.withLock { $0 })\"" }, body: { PauseResumeTests.body }, gate: gate)
        let file = temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("resource")))
        operation.outputStream = OutputStream(toFileAtPath: file.path, append: append)
        let probe = CompletionProbe()
        await PauseResumeTests.pauseAfterFirstPart(operation, client: testClient(server, transport), probe: probe)
        #expect(operation.isPaused)
        if changingResource { version.withLock { $0 = 2 } }
        gate.signal()
        operation.resume()
        let outcome = await probe.outcome()
        return (operation, outcome, try Data(contentsOf: file))
    }

    @Test(
        "Pause and resume append to the stream: the file is the whole body, byte for byte", arguments: HTTPClient.TransportKind.testedKinds)
    func pauseResumeAppends(transport: HTTPClient.TransportKind) async throws {
        let (operation, outcome, file) = try await Self.pauseAndResume(transport: transport, append: true)
        #expect(outcome.error == nil)
        #expect(operation.response?.statusCode == 206)
        #expect(file == PauseResumeTests.body)
    }

    @Test(
        "A resumed body the server sends from the start again cannot be rewound: cannotRestart",
        arguments: HTTPClient.TransportKind.testedKinds)
    func restartRefused(transport: HTTPClient.TransportKind) async throws {
        let (_, outcome, file) = try await Self.pauseAndResume(transport: transport, append: false, changingResource: true)
        guard case .outputStreamFailed(.cannotRestart(let written))? = outcome.error else {
            Issue.record("expected outputStreamFailed(.cannotRestart)")
            return
        }
        #expect(written >= Int64(PauseResumeTests.firstPart))
        #expect(file == PauseResumeTests.body.prefix(Int(written)))
    }
}

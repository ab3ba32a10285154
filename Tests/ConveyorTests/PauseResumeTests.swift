import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@Suite("Pause and resume continue with Range")
struct PauseResumeTests {
    static let size = 20_000_000
    static let firstPart = 2 << 20
    static let body = FileDownloadTests.pattern(size)

    /// Serves `body` with an ETag; a request without Range gets the first 2 MB, then nothing
    /// until the gate opens (by then the client has paused and gone); Range requests are
    /// answered at once.
    static func route(
        _ server: LocalHTTPServer, etag: @escaping @Sendable () -> String, body: @escaping @Sendable () -> Data, gate: DispatchSemaphore
    ) {
        server.route("/resource") { request in
            if request.headers["Range"] != nil { return .ranged(body(), etag: etag(), for: request) }
            let data = body()
            return .init(
                headers: ["ETag": etag(), "Content-Length": String(data.count), "Accept-Ranges": "bytes"],
                body: .stream(chunked: false) { writer in
                    try writer.write(data.prefix(firstPart))
                    _ = gate.wait(timeout: .now() + 60)  // ends a hang only: a stalled run may pause late
                    try writer.write(data.dropFirst(firstPart))
                })
        }
    }

    /// Enqueues `operation`, pauses it once `firstPart` bytes arrived, and returns once paused
    /// (or once it finished, if it failed before that: the caller's expectations then fail).
    static func pauseAfterFirstPart(_ operation: HTTPRequestOperation, client: HTTPClient, probe: CompletionProbe) async {
        let reached = AsyncStream.makeStream(of: Void.self)
        operation.setDownloadProgressBlock { _, total, _ in if total >= firstPart { reached.continuation.yield() } }
        probe.attach(to: operation)
        client.enqueue(operation)
        let finishedEarly = Task {
            _ = await probe.outcome()
            reached.continuation.yield()
        }
        for await _ in reached.stream { break }
        finishedEarly.cancel()
        operation.pause()
    }

    @Test("A paused 20 MB download resumes with Range and If-Range and arrives byte for byte", arguments: ["file", "memory"])
    func resumes(kind: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-pause-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server, client in
            let gate = DispatchSemaphore(value: 0)
            defer { gate.signal() }
            Self.route(server, etag: { "\"v1\"" }, body: { Self.body }, gate: gate)
            let request = try client.request(method: .get, path: "resource")
            let operation =
                kind == "file"
                ? FileDownloadOperation(request: request, destination: .directory(directory), options: [.createIntermediateDirectories])
                : HTTPRequestOperation(request: request)
            let probe = CompletionProbe()
            await Self.pauseAfterFirstPart(operation, client: client, probe: probe)
            #expect(operation.isPaused && operation.state == .paused && !operation.isFinished)
            gate.signal()
            operation.resume()
            let outcome = await probe.outcome()
            #expect(outcome.error == nil)
            let received =
                kind == "file"
                ? try Data(contentsOf: try #require((operation as? FileDownloadOperation)?.destinationURL)) : operation.responseData
            #expect(received == Self.body)
            let ranged = try #require(server.receivedRequests.last)
            #expect(ranged.headers["Range"] == "bytes=\(Self.firstPart)-" && ranged.headers["If-Range"] == "\"v1\"")
            #expect(operation.response?.statusCode == 206)
            #expect(await probe.settledCallCount == 1)
            if kind == "file" { #expect((try FileManager.default.contentsOfDirectory(atPath: directory.path)) == ["resource"]) }
        }
    }

    @Test("If the resource changed meanwhile, the server answers 200 and the download starts over")
    func resourceChanged() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-pause-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server, client in
            let gate = DispatchSemaphore(value: 0)
            defer { gate.signal() }
            let version = Lock(1)
            // Rotated by a byte: different throughout, made with two copies (reversing 20 MB byte by
            // byte took seconds of the cooperative pool in a debug build, stalling other suites).
            let changed = Data(Self.body.dropFirst()) + Self.body.prefix(1)
            Self.route(
                server, etag: { "\"v\(version.withLock { $0 })\"" }, body: { version.withLock { $0 } == 1 ? Self.body : changed },
                gate: gate)
            let operation = FileDownloadOperation(
                request: try client.request(method: .get, path: "resource"), destination: .directory(directory),
                options: [.createIntermediateDirectories])
            let probe = CompletionProbe()
            await Self.pauseAfterFirstPart(operation, client: client, probe: probe)
            version.withLock { $0 = 2 }
            gate.signal()
            operation.resume()
            #expect(await probe.outcome().error == nil)
            #expect(operation.response?.statusCode == 200)
            #expect(try Data(contentsOf: try #require(operation.destinationURL)) == changed)
        }
    }

    @Test("Pause before start: the queue does not run it until resumed; cancel while paused finishes once")
    func pauseBeforeStart() async throws {
        try await withServer { server, client in
            let probe = CompletionProbe()
            let operation = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
            probe.attach(to: operation)
            operation.pause()
            client.enqueue(operation)
            // An operation enqueued after it runs and finishes; the paused one has sent nothing.
            _ = try await client.get("headers")
            #expect(operation.isPaused && server.receivedRequests.map(\.path) == ["/headers"])
            operation.resume()
            #expect(await probe.outcome().error == nil)

            let second = CompletionProbe()
            let paused = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
            second.attach(to: paused)
            paused.pause()
            client.enqueue(paused)
            paused.cancel()
            #expect(await second.outcome().error?.isCancelled == true)
            #expect(await second.settledCallCount == 1)
        }
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// `drain` returns after the outcomes it caused have been heard (issue 37, item 26): the
/// completion blocks of the operations it waited for or cancelled have run, not just been
/// scheduled. Real sockets, both transports.
@Suite("Drain waits for the completion blocks it caused")
struct DrainDeliveryTests {
    /// A failure block that takes a while, as an app's does (it writes a record, updates a
    /// model): `drain` returning before it ran would let the process exit under it.
    static func slowFailure(_ calls: Counter) -> HTTPRequestOperation.Failure {
        { _, error in
            Thread.sleep(forTimeInterval: 0.3)  // the app's work, not synchronisation
            if case .cancelled(.shuttingDown) = error { calls.increment() } else { Self.seen.withLock { $0.append("\(error)") } }
        }
    }

    /// The grace the "heard" tests give: their blocks take 0.3 s each, and a machine running
    /// the whole suite in parallel ran them past the default 2 s. The bound itself has its
    /// own test below.
    static let loadedGrace: TimeInterval = 60

    /// How long the held route holds at most. The helper's 10 s was less than a stall of the
    /// cooperative pool in a full parallel run (two threads here): the route answered on its
    /// own before the test got to `drain`, the request succeeded, and drain had nothing to
    /// cancel. The route is released when the test ends in any case.
    static let heldFor: TimeInterval = 120

    /// A serial callback queue of the test's own: the slow blocks of parallel tests do not
    /// queue behind each other on the shared default one.
    static let seen = Lock<[String]>([])

    static func ownQueue() -> DispatchQueue { DispatchQueue(label: "test.drain-callbacks") }

    @Test(
        "A held file download cancelled by drain, and a queued request: both failure blocks ran when drain returns, once",
        arguments: HTTPClient.TransportKind.testedKinds)
    func cancelledDownloadHeard(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let held = HeldRoute(server, fallback: Self.heldFor)
        defer { held.release() }
        let client = testClient(server, transport) {
            $0.maximumConcurrentOperations = 1
            $0.callbackQueue = Self.ownQueue()
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-drain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let download = Counter()
        let queued = Counter()
        let successes = Counter()
        client.download(
            "hold", to: .file(directory.appendingPathComponent("file")), success: { _, _ in successes.increment() },
            failure: Self.slowFailure(download))
        client.get("get", success: { _, _ in successes.increment() }, failure: Self.slowFailure(queued))
        await held.arrived()
        #expect(!(await client.drain(timeout: 0.2, completionGrace: Self.loadedGrace)))
        // No waiting here: drain has returned, so the app has heard both outcomes.
        #expect(download.count == 1 && queued.count == 1, "\(Self.seen.withLock { $0 })")
        client.configuration.callbackQueue.sync {}
        #expect(download.count == 1 && queued.count == 1 && successes.count == 0)
        #expect(server.requestCount(path: "/get") == 0)
    }

    @Test(
        "A file download, an upload and a stream at once: drain cancels all three, and the two failure blocks ran and the stream ended with the shutdown when it returns",
        arguments: HTTPClient.TransportKind.testedKinds)
    func downloadUploadAndStreamHeard(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let heldDownload = HeldRoute(server, path: "/hold", fallback: Self.heldFor)
        defer { heldDownload.release() }
        let heldUpload = HeldRoute(server, path: "/hold-upload", fallback: Self.heldFor)
        defer { heldUpload.release() }
        let streaming = AsyncStream.makeStream(of: Void.self)
        server.route("/drip-lines") { _ in
            .init(
                headers: ["Content-Type": "text/plain"],
                body: .stream(chunked: true) { writer in
                    streaming.continuation.yield()
                    for index in 0..<600 {
                        try writer.write(Data("line \(index)\n".utf8))
                        guard writer.pause(0.1) else { return }  // pacing the drip, not synchronisation
                    }
                })
        }
        let client = testClient(server, transport) { $0.callbackQueue = Self.ownQueue() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-drain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = directory.appendingPathComponent("upload.bin")
        try Data(repeating: 7, count: 256 * 1024).write(to: body)
        let download = Counter()
        let upload = Counter()
        let successes = Counter()
        client.download(
            "hold", to: .file(directory.appendingPathComponent("file")), success: { _, _ in successes.increment() },
            failure: Self.slowFailure(download))
        let uploading = client.operation(
            with: try client.request(method: .post, path: "hold-upload", bodyFile: body), success: { _, _ in successes.increment() },
            failure: Self.slowFailure(upload))
        client.enqueue(uploading)
        let stream = try await client.stream("drip-lines")
        let consumer = Task { () -> ConveyorError? in
            do {
                for try await _ in stream.lines {}
                return nil
            } catch {
                return error as? ConveyorError
            }
        }
        await heldDownload.arrived()
        await heldUpload.arrived()
        for await _ in streaming.stream { break }
        #expect(!(await client.drain(timeout: 0.2, completionGrace: Self.loadedGrace)))
        // No waiting here: drain has returned, so the app has heard both outcomes.
        #expect(download.count == 1 && upload.count == 1, "\(Self.seen.withLock { $0 })")
        guard case .cancelled(.shuttingDown)? = await consumer.value else {
            Issue.record("the stream did not end with the shutdown's cancellation")
            return
        }
        client.configuration.callbackQueue.sync {}
        #expect(download.count == 1 && upload.count == 1 && successes.count == 0)
    }

    @Test(
        "An operation that finishes within the deadline: its success block ran when drain returns",
        arguments: HTTPClient.TransportKind.testedKinds)
    func finishedInTimeHeard(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let held = HeldRoute(server, body: "done")
        let client = testClient(server, transport) { $0.callbackQueue = Self.ownQueue() }
        let heard = Counter()
        client.get(
            "hold",
            success: { _, _ in
                Thread.sleep(forTimeInterval: 0.3)  // the app's work, not synchronisation
                heard.increment()
            }, failure: nil)
        await held.arrived()
        // `.keep` leaves the queue suspended, so the test sees when the drain has begun. The
        // deadline only has to outlast the released answer (milliseconds when quiet): 60 s, so
        // that a loaded machine's late answer is still "within the deadline" (not a hang bound).
        let drain = Task { await client.drain(timeout: 60, queued: .keep, completionGrace: Self.loadedGrace) }
        // drain suspends the queue before its first suspension point.
        while !client.operationQueue.isSuspended { await Task.yield() }
        held.release()
        #expect(await drain.value)
        #expect(heard.count == 1)
    }

    @Test(
        "A batch's completion, scheduled by the completion blocks drain caused, ran when drain returns",
        arguments: HTTPClient.TransportKind.testedKinds)
    func batchCompletionHeard(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let held = HeldRoute(server, fallback: Self.heldFor)
        defer { held.release() }
        let client = testClient(server, transport) { $0.callbackQueue = Self.ownQueue() }
        let completions = Counter()
        let operation = client.operation(with: try client.request(method: .get, path: "hold"), success: nil, failure: nil)
        client.enqueueBatch(
            [operation],
            completion: { operations in
                Thread.sleep(forTimeInterval: 0.3)  // the app's work, not synchronisation
                if operations.allSatisfy(\.isCancelled) { completions.increment() }
            })
        await held.arrived()
        #expect(!(await client.drain(timeout: 0.2, completionGrace: Self.loadedGrace)))
        #expect(completions.count == 1)
    }

    @Test(
        "A callback queue that never runs cannot hold drain past its deadline plus the grace",
        arguments: HTTPClient.TransportKind.testedKinds)
    func blockedCallbackQueueBounded(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let held = HeldRoute(server, fallback: Self.heldFor)
        defer { held.release() }
        // Stands for `DispatchQueue.main` in a Linux program whose main thread blocks.
        let stuck = DispatchQueue(label: "test.stuck-callbacks")
        let gate = DispatchSemaphore(value: 0)
        stuck.async { gate.wait() }
        let client = testClient(server, transport) { $0.callbackQueue = stuck }
        let calls = Counter()
        client.get("hold", success: nil, failure: { _, _ in calls.increment() })
        await held.arrived()
        let start = ContinuousClock.now
        #expect(!(await client.drain(timeout: 0.2)))
        let elapsed = ContinuousClock.now - start
        let bound = 0.2 + HTTPClient.drainCompletionGrace
        // The time is the feature: drain gives up at its deadline plus the grace, not earlier
        // and not for ever. 20 s of slack above the 2.2 s: a loaded machine runs timers late.
        #expect(elapsed >= .seconds(bound) && elapsed < .seconds(bound + 20), "\(elapsed)")
        #expect(calls.count == 0)
        gate.signal()
        stuck.sync {}
        #expect(calls.count == 1)
    }
}

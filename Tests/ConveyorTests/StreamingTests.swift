import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// Responses consumed while they arrive, with backpressure, over real sockets on both transports.
@Suite("Streaming responses: chunks, lines, backpressure, cancellation")
struct StreamingTests {
    @Test(
        "Chunked and Content-Length bodies arrive whole, in order; lines split at CRLF, LF and CR",
        arguments: HTTPClient.TransportKind.testedKinds)
    func chunksAndLines(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let parts = ["alpha\r\n", "beta\n", "gam", "ma\r", "\ndelta\r", "epsilon\n\n", "last"]
        server.route("/chunked") { _ in
            .init(
                headers: ["Content-Type": "text/plain"],
                body: .stream(chunked: true) { writer in
                    for part in parts {
                        try writer.write(Data(part.utf8))
                        writer.pause(0.01)
                    }
                })
        }
        let whole = Data(parts.joined().utf8)
        server.route("/fixed") { _ in .init(headers: ["Content-Type": "text/plain"], body: .data(whole)) }
        let client = testClient(server, transport)
        for path in ["chunked", "fixed"] {
            let stream = try await client.stream(path)
            #expect(stream.response.statusCode == 200)
            var received = Data()
            for try await chunk in stream { received.append(chunk) }
            #expect(received == whole, "\(path)")
            var lines: [String] = []
            for try await line in try await client.stream(path).lines { lines.append(line) }
            #expect(lines == ["alpha", "beta", "gamma", "delta", "epsilon", "", "last"], "\(path)")
        }
    }

    @Test("A 404 throws when the head arrives, with its body, before any chunk", arguments: HTTPClient.TransportKind.testedKinds)
    func errorStatusThrows(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/missing") { _ in .text("no such stream", status: 404) }
        await #expect {
            _ = try await testClient(server, transport).stream("missing")
        } throws: { error in
            guard let error = error as? ConveyorError else { return false }
            return error.statusCode == 404 && error.responseData == Data("no such stream".utf8)
        }
    }

    @Test(
        "Breaking out of the loop over a body that never ends closes the connection",
        arguments: HTTPClient.TransportKind.testedKinds)
    func breakCancels(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let closed = AsyncStream.makeStream(of: Void.self)
        server.route("/forever") { _ in
            .init(
                body: .stream(chunked: true) { writer in
                    do {
                        while true {
                            try writer.write(Data("tick\n".utf8))
                            guard writer.pause(0.02) else { return }
                        }
                    } catch {
                        closed.continuation.yield()  // the client went away
                        throw error
                    }
                })
        }
        let stream = try await testClient(server, transport).stream("forever")
        var seen = 0
        for try await _ in stream {
            seen += 1
            if seen == 3 { break }
        }
        #expect(seen == 3)
        // The event is the server's write failing on the closed connection; nothing else ends
        // the body. The 30 s limit is no promise: it fails a connection that stays open.
        #expect(await first(of: closed.stream, failingAfter: 30) != nil, "the connection stayed open")
    }

    /// The transports that can pause a transfer: corelibs URLSession (Linux) restarts a data
    /// task resumed after a suspend, and reads ahead into its delegate queue regardless.
    static var pausingKinds: [HTTPClient.TransportKind] {
        #if os(Linux)
            [.curl]
        #else
            [.urlSession]
        #endif
    }

    @Test("A consumer that stops pulling pauses the transfer: memory stays near the buffer limit", arguments: pausingKinds)
    func backpressure(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let block = Data(repeating: 0x61, count: 64 * 1024)
        let total = 48 * 1024 * 1024
        server.route("/flood") { _ in
            .init(
                headers: ["Content-Length": String(total)],
                body: .stream(chunked: false) { writer in
                    for _ in 0..<(total / block.count) { try writer.write(block) }
                })
        }
        let limit = 1024 * 1024
        let stream = try await testClient(server, transport).stream("flood", bufferLimit: limit)
        // The consumer looks away while the server could send everything; the transfer must pause.
        try await Task.sleep(for: .milliseconds(300))
        var received = 0
        for try await chunk in stream { received += chunk.count }
        #expect(received == total)
        // The limit, plus what was already in flight when the pause took effect.
        #expect(stream.channel.peakBuffered <= limit + 512 * 1024, "peak \(stream.channel.peakBuffered)")
    }

    @Test("A connection dropped mid-body is thrown by the sequence as a typed error", arguments: HTTPClient.TransportKind.testedKinds)
    func droppedConnection(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let stream = try await testClient(server, transport).stream("fault/close-mid-body")
        await #expect {
            for try await _ in stream {}
        } throws: { error in
            guard case .network(let urlError)? = error as? ConveyorError else { return false }
            return urlError.code == .networkConnectionLost
        }
    }

    @Test(
        "The per-chunk block gets the body in order on the callback queue, before the completion block",
        arguments: HTTPClient.TransportKind.testedKinds)
    func chunkBlock(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let body = FileDownloadTests.pattern(2_000_000)
        server.route("/body") { _ in .init(headers: ["Content-Type": "application/octet-stream"], body: .data(body)) }
        let client = testClient(server, transport)
        let operation = client.operation(with: try client.request(method: .get, path: "body"), success: nil, failure: nil)
        let probe = CompletionProbe()
        let received = Lock(Data())
        let onQueue = Lock(true)
        operation.setChunkReceivedBlock { _, chunk in
            if !probe.isCurrent { onQueue.withLock { $0 = false } }
            received.withLock { $0.append(chunk) }
        }
        probe.attach(to: operation)
        let atCompletion = Lock(0)
        operation.setCompletionBlock(
            success: { operation, value in
                atCompletion.withLock { $0 = received.withLock { $0.count } }
                probe.success(operation, value)
            }, failure: probe.failure)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
        #expect(received.withLock { $0 } == body && atCompletion.withLock { $0 } == body.count)
        #expect(onQueue.withLock { $0 } && operation.responseData == Data())
    }

    @Test(
        "A retry that gets the body from the start again after chunks were delivered fails with cannotRestart, never repeats them",
        arguments: HTTPClient.TransportKind.testedKinds)
    func chunkBlockRestartRefused(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let body = FileDownloadTests.pattern(100_000)
        let hits = Lock(0)
        server.route("/cut-then-whole") { _ in
            let hit = hits.withLock { count -> Int in
                count += 1
                return count
            }
            // No ETag: the retry cannot continue with Range and gets the whole body again.
            guard hit == 1 else { return .init(headers: ["Content-Type": "application/octet-stream"], body: .data(body)) }
            return .init(
                headers: ["Content-Type": "application/octet-stream", "Content-Length": "\(body.count)"],
                body: .stream(chunked: false) { writer in
                    try writer.write(body.prefix(40_000))
                    throw POSIXError(.ECONNRESET)  // the connection ends 60,000 bytes short
                })
        }
        let client = testClient(server, transport) { $0.retryPolicy = RetryPolicy(maximumAttempts: 2, baseDelay: 0.01) }
        let operation = client.operation(with: try client.request(method: .get, path: "cut-then-whole"), success: nil, failure: nil)
        let received = Lock(Data())
        operation.setChunkReceivedBlock { _, chunk in received.withLock { $0.append(chunk) } }
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let outcome = await probe.outcome()
        #expect(hits.withLock { $0 } == 2)
        guard case .outputStreamFailed(.cannotRestart(let delivered))? = outcome.error else {
            Issue.record("expected outputStreamFailed(.cannotRestart), got \(String(describing: outcome.error))")
            return
        }
        // What the block got is a prefix of the body, each byte once.
        let chunks = received.withLock { $0 }
        #expect(delivered == Int64(chunks.count) && body.starts(with: chunks), "\(chunks.count) bytes")
    }
}

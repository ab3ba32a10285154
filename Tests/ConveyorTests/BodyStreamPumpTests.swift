import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

extension PumpThreadSuites {
    /// Stream bodies sent through ``BodyStreamPump``, as the URLSession transport always does on
    /// Apple platforms: here the pump is forced on Linux (`pumpsBodyStreams`) and runs through the
    /// real transport, over real sockets. Serialized: the tests count the pump's threads.
    @Suite("Stream bodies through the pump (the URLSession transport's path on Apple)", .serialized)
    struct BodyStreamPumpTests {
        static func pumpingClient(_ baseURL: URL, configure: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
            testClient(baseURL: baseURL, .urlSession) {
                $0.pumpsBodyStreams = true
                configure(&$0)
            }
        }

        static func bytes(_ count: Int, seed: Int = 0) -> Data {
            // The pattern repeats every 256 bytes: one block, repeated (a byte-by-byte map of 16 MiB
            // costs seconds of CPU in a debug build, which the parallel suites feel).
            let block = Data((0..<256).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) })
            var data = Data(capacity: count)
            while data.count < count { data.append(block.prefix(count - data.count)) }
            return data
        }

        /// The pump threads alive now (their name, as Linux shows it).
        static func pumpThreads() -> Int {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.filter { task in
                (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix("conveyor-pump") == true
            }.count
        }

        /// Waits (at most 60 s, which only ends a hang) until no pump thread is left: a thread ends a
        /// moment after the task that stopped it completed. A bounded wait for a condition, not a
        /// sleep standing in for one.
        static func noPumpThreadLeft() async -> Bool { await pumpThreadsBecome(0) }

        /// Waits (at most 60 s, which only ends a hang) until `count` pump threads are alive (a new
        /// one names itself when it first runs, which on a loaded machine can come after the
        /// request head went out).
        static func pumpThreadsBecome(_ count: Int) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(60)
            while pumpThreads() != count {
                if ContinuousClock.now > deadline { return false }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return true
        }

        static func send(_ request: URLRequest, on client: HTTPClient) async throws -> Data {
            try await client.response(for: request, responseSerializer: DataResponseSerializer()).data
        }

        @Test("A Data-backed InputStream body arrives whole, chunked, and the pump's thread ends")
        func dataStream() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL)
            let body = Self.bytes(300_000)
            var request = try client.request(method: .post, path: "post")
            request.httpBodyStream = InputStream(data: body)
            _ = try await Self.send(request, on: client)
            let received = try #require(server.receivedRequests.last)
            #expect(received.body == body && received.wasChunked)
            #expect(await Self.noPumpThreadLeft())
        }

        @Test("A multipart body from disk (BodyFileStream) arrives whole under its exact Content-Length")
        func multipartFromDisk() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL) { $0.multipartMemoryThreshold = 0 }
            let part = Self.bytes(1_000_000, seed: 3)
            let request = try client.multipartRequest(path: "post") { form in
                form.append(data: part, name: "file", fileName: "a.bin", mimeType: "application/octet-stream")
            }
            #expect(request.httpBodyStream is BodyFileStream)
            _ = try await Self.send(request, on: client)
            let received = try #require(server.receivedRequests.last)
            #expect(try received.multipartParts().first?.body == part)
            #expect(!received.wasChunked && received.headers["Content-Length"] == String(received.body.count))
            #expect(await Self.noPumpThreadLeft())
        }

        @Test("A file body (request(bodyFile:)) arrives whole under its exact Content-Length")
        func fileBody() async throws {
            let server = try RecordingSocketServer()
            defer { server.stop() }
            let directory = try TemporaryDirectory()
            let url = directory.url.appendingPathComponent("body.bin")
            let data = Self.bytes(2 * 1024 * 1024 + 7)
            try data.write(to: url)
            let client = Self.pumpingClient(server.baseURL)
            _ = try await Self.send(try client.request(method: .put, path: "upload", bodyFile: url), on: client)
            let exchange = try #require(await server.exchanges(1).first)
            #expect(exchange.values(of: "Content-Length") == [String(data.count)])
            #expect(exchange.complete && exchange.body == data && exchange.trailing == 0)
        }

        @Test("A throttled multipart upload sleeps on the pump's thread: delayed packets, the body whole")
        func throttled() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL) { $0.multipartMemoryThreshold = 0 }
            let part = Self.bytes(64 * 1024, seed: 5)
            let request = try client.multipartRequest(path: "post") { form in
                form.append(data: part, name: "t", fileName: "t.bin", mimeType: "application/octet-stream")
                form.throttleBandwidth(packetSize: 16 * 1024, delay: 0.1)
            }
            let start = ContinuousClock.now
            _ = try await Self.send(request, on: client)
            // 64 KiB plus the form's framing in 16 KiB packets: at least 4 waits of 0.1 s.
            #expect(ContinuousClock.now - start >= .milliseconds(400))
            #expect(try server.receivedRequests.last?.multipartParts().first?.body == part)
            #expect(await Self.noPumpThreadLeft())
        }

        /// A caller's stream that overrides only what a Swift subclass usually does.
        final class CountingStream: InputStream {
            let length: Int
            private var offset = 0
            private var status: Stream.Status = .notOpen

            init(length: Int) {
                self.length = length
                super.init(data: Data())
            }

            override func open() { status = .open }
            override func close() { status = .closed }
            override var streamStatus: Stream.Status { status }
            override var streamError: (any Error)? { nil }
            override var hasBytesAvailable: Bool { offset < length }
            override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
                let count = min(maxLength, length - offset, 1000)
                for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: (offset + index) &* 31) }
                offset += count
                if offset == length { status = .atEnd }
                return count
            }
        }

        @Test("A caller's own InputStream subclass (short reads) arrives whole")
        func callersSubclass() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL)
            var request = try client.request(method: .post, path: "post")
            request.httpBodyStream = CountingStream(length: 250_001)
            _ = try await Self.send(request, on: client)
            #expect(server.receivedRequests.last?.body == Self.bytes(250_001))
            #expect(await Self.noPumpThreadLeft())
        }

        @Test(
            "A file that shrinks during the upload fails with bodyFileFailed(.fileChanged), never a short success nor a hang",
            arguments: ["shrinks", "grows"])
        func fileChangesDuringUpload(change: String) async throws {
            let server = try RecordingSocketServer(holdsBody: true)
            defer { server.stop() }
            let directory = try TemporaryDirectory()
            let url = directory.url.appendingPathComponent("big.bin")
            // More than the pipe, corelibs' and the sockets' buffers hold: most of it is unread
            // when the head has arrived and the body is held.
            let length = 32 * 1024 * 1024
            try Data(repeating: 0x5A, count: length).write(to: url)
            let client = Self.pumpingClient(server.baseURL)
            let request = try client.request(method: .put, path: "upload", bodyFile: url)
            let sending = Task { () -> Result<Data, any Error> in
                do { return .success(try await Self.send(request, on: client)) } catch { return .failure(error) }
            }
            #expect(await server.waitForHead())
            if change == "shrinks" {
                try FileHandle(forWritingTo: url).truncate(atOffset: UInt64(length / 2))
            } else {
                let handle = try FileHandle(forWritingTo: url)
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(count: 4096))
                try handle.close()
            }
            server.releaseBody()
            let outcome = await sending.value
            guard case .failure(let error) = outcome, case .bodyFileFailed(.fileChanged(url))? = error as? ConveyorError else {
                Issue.record("expected bodyFileFailed(.fileChanged), got \(outcome)")
                return
            }
            let exchange = try #require(await server.exchanges(1).first)
            #expect(!exchange.complete && exchange.body.count < length)
            // The failure cancels the task: the server saw the client close the connection.
            // Without that, the short body waited for the server's 20 s read timeout (an event,
            // not a time: a bound of 10 s after the change raced a loaded machine's slowness).
            #expect(exchange.closedByClient, "the server's read timed out: the failed upload's connection stayed open")
            #expect(await Self.noPumpThreadLeft())
        }

        /// A caller's stream that fails (`read` returns -1) after `failingAfter` bytes.
        final class FailingStream: InputStream {
            let failingAfter: Int
            private var offset = 0
            private var status: Stream.Status = .notOpen

            init(failingAfter: Int) {
                self.failingAfter = failingAfter
                super.init(data: Data())
            }

            override func open() { status = .open }
            override func close() { status = .closed }
            override var streamStatus: Stream.Status { status }
            override var streamError: (any Error)? { nil }
            override var hasBytesAvailable: Bool { status == .open }
            override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
                guard offset < failingAfter else {
                    status = .error
                    return -1
                }
                let count = min(maxLength, failingAfter - offset)
                buffer.update(repeating: 0x41, count: count)
                offset += count
                return count
            }
        }

        @Test("A caller's stream that fails ends the upload with requestBodyStreamExhausted, never as a short body's success")
        func failingCallerStream() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL)
            for _ in 0..<50 {
                var request = try client.request(method: .post, path: "post")
                request.httpBodyStream = FailingStream(failingAfter: 200_000)
                do {
                    _ = try await Self.send(request, on: client)
                    Issue.record("a failed body was sent as a whole one")
                } catch ConveyorError.network(let error) {
                    #expect(error.code == .requestBodyStreamExhausted)
                }
            }
            #expect(await Self.noPumpThreadLeft())
        }

        @Test("A cancel mid-upload ends the operation at once and the pump's thread")
        func cancelMidUpload() async throws {
            let server = try RecordingSocketServer(holdsBody: true)
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL)
            var request = try client.request(method: .post, path: "upload")
            // More than the socket buffers can take while the server holds the body: this
            // machine's tcp_rmem allows 32 MiB and tcp_wmem 4 MiB, and a 16 MiB body once fit
            // whole, so the pump's thread had ended (0 threads) before the test looked.
            request.httpBodyStream = InputStream(data: Self.bytes(64 * 1024 * 1024))
            let probe = CompletionProbe()
            let operation = client.operation(with: request, success: nil, failure: nil)
            probe.attach(to: operation)
            client.enqueue(operation)
            #expect(await server.waitForHead())
            #expect(await Self.pumpThreadsBecome(1), "\(Self.pumpThreads()) pump threads after 60 s")
            operation.cancel()
            let outcome = await probe.outcome()
            guard case .cancelled? = outcome.error else {
                Issue.record("expected a cancel, got \(outcome)")
                return
            }
            #expect(await Self.noPumpThreadLeft())
        }

        @Test("A server that answers early with an error and closes ends the upload: the 413 or a lost connection, no hang")
        func earlyAnswer() async throws {
            let server = try EarlyAnsweringServer()
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL)
            var request = try client.request(method: .post, path: "upload")
            request.httpBodyStream = InputStream(data: Self.bytes(16 * 1024 * 1024))
            do {
                _ = try await Self.send(request, on: client)
                Issue.record("succeeded")
            } catch ConveyorError.unacceptableStatusCode(let status, _, _) {
                #expect(status == 413)
            } catch ConveyorError.network {
                // The reset may beat the answer to the client.
            }
            #expect(await Self.noPumpThreadLeft())
        }

        @Test("A 307 redirect of a multipart body from disk sends it whole again")
        func redirected() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL) { $0.multipartMemoryThreshold = 0 }
            let part = Self.bytes(500_000, seed: 9)
            let request = try client.multipartRequest(path: "redirect-to?url=/post&status_code=307") { form in
                form.append(data: part, name: "file", fileName: "a.bin", mimeType: "application/octet-stream")
            }
            _ = try await Self.send(request, on: client)
            let final = try #require(server.receivedRequests.last)
            #expect(final.path == "/post")
            #expect(try final.multipartParts().first?.body == part)
            #expect(await Self.noPumpThreadLeft())
        }

        /// Without the pump: corelibs reads the same stream again for the authorized request, and
        /// never asks `needNewBodyStream` (so a pumped body's resend cannot be run on Linux: corelibs
        /// reopens the pipe it already read).
        @Test("A throttled body answering a Basic challenge is sent whole again: the stream restarts when reopened")
        func throttledChallenge() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let client = testClient(server, .urlSession)
            client.defaultCredential = URLCredential(user: "user", password: "passwd", persistence: .none)
            let part = Self.bytes(40_000, seed: 11)
            let request = try client.multipartRequest(path: "basic-auth/user/passwd") { form in
                form.append(data: part, name: "t", fileName: "t.bin", mimeType: "application/octet-stream")
                form.throttleBandwidth(packetSize: 16 * 1024, delay: 0.01)
            }
            _ = try await Self.send(request, on: client)
            let authorized = try #require(server.receivedRequests.last { $0.headers["Authorization"] != nil })
            #expect(try authorized.multipartParts().first?.body == part)
            #expect(await Self.noPumpThreadLeft())
        }

        @Test("200 streamed uploads in a row leave no thread and no descriptor behind")
        func noLeaks() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let client = Self.pumpingClient(server.baseURL)
            let body = Self.bytes(10_000)
            func descriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? -1 }
            // One upload first, so the connection and the client's queues exist before counting.
            var warmUp = try client.request(method: .post, path: "post")
            warmUp.httpBodyStream = InputStream(data: body)
            _ = try await Self.send(warmUp, on: client)
            #expect(await Self.noPumpThreadLeft())
            let before = descriptors()
            for _ in 0..<200 {
                var request = try client.request(method: .post, path: "post")
                request.httpBodyStream = InputStream(data: body)
                _ = try await Self.send(request, on: client)
            }
            #expect(await Self.noPumpThreadLeft())
            // Other suites run meanwhile and open descriptors of their own; a leak of even one
            // per upload would be 200.
            let after = descriptors()
            #expect(after - before < 40, "\(before) descriptors before, \(after) after")
            #expect(server.receivedRequests.suffix(200).allSatisfy { $0.body == body })
        }
    }
}

/// A server that answers every request with `413` as soon as its head arrives, and closes
/// without reading the body.
final class EarlyAnsweringServer: Sendable {
    let port: Int
    private let listener: Int32

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }

    init() throws {
        (listener, port) = try listeningOnLoopback()
        Thread.detachNewThread { [self] in serve() }
    }

    /// Stops accepting; the serving thread closes the descriptor as it leaves.
    func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                close(listener)
                return
            }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received = Data()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while received.range(of: Data("\r\n\r\n".utf8)) == nil {
                let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                received.append(contentsOf: buffer[0..<count])
            }
            let answer = Array("HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(connection)
        }
    }
}

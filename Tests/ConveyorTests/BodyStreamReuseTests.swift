import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension PumpThreadSuites {
    /// A caller's body stream is read once: the findings of the independent attack on stream bodies.
    /// Before the fix, an attempt that needed the body again — a 307, a Basic challenge answered
    /// with a credential, a resume after `pause()` — sent what was left of the stream (0 bytes, or
    /// the last megabytes of 8) as if it were the whole body, and the operation succeeded. Each test
    /// runs on the curl transport, on URLSession, and on URLSession through the body pump (the path
    /// Apple platforms take).
    @Suite("A caller's body stream is sent once, never cut short")
    struct BodyStreamReuseTests {
        enum Route: String, CaseIterable, CustomTestStringConvertible, Sendable {
            case curl, urlSession, pumped
            var testDescription: String { rawValue }
        }

        static func client(
            _ server: LocalHTTPServer, _ route: Route, configure: (inout HTTPClient.Configuration) -> Void = { _ in }
        ) -> HTTPClient {
            testClient(server, route == .curl ? .curl : .urlSession) {
                $0.pumpsBodyStreams = route == .pumped
                configure(&$0)
            }
        }

        static func body(_ count: Int) -> Data {
            // The pattern repeats every 64 KiB: one block, repeated (a byte-by-byte map of 8 MiB
            // costs seconds of CPU in a debug build, which the parallel suites feel).
            let block = Data((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 8) })
            var data = Data(capacity: count)
            while data.count < count { data.append(block.prefix(count - data.count)) }
            return data
        }

        static func streamRequest(_ server: LocalHTTPServer, _ path: String, _ stream: InputStream) -> URLRequest {
            var request = URLRequest(url: server.baseURL.appendingPathComponent(path))
            request.httpMethod = "POST"
            request.httpBodyStream = stream
            return request
        }

        /// `/auth` on `server`: 401 with a Basic challenge until the request carries user `u`,
        /// password `p`; then the body's length. - Returns: The `Authorization` value that passes.
        @discardableResult
        static func routeBasicChallenge(on server: LocalHTTPServer) -> String {
            let expected = "Basic " + Data("u:p".utf8).base64EncodedString()
            server.route("/auth") { request in
                guard request.headers["Authorization"] == expected else {
                    return LocalHTTPServer.Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"x\""])
                }
                return .text("\(request.body.count)")
            }
            return expected
        }

        /// Whether `error` is the documented failure for a body stream that cannot be sent again.
        static func isExhausted(_ error: any Error) -> Bool {
            if case ConveyorError.network(let urlError) = error { return urlError.code == .requestBodyStreamExhausted }
            return false
        }

        @Test("The machine marks an attempt that would send a caller's stream a second time, and only that")
        func machineRule() throws {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:9/upload")!)
            let stream = CallerStream(Data(count: 10))
            request.httpBodyStream = stream
            var machine = TransferStateMachine(request: request)
            machine.moved(to: .executing)
            #expect(machine.attemptBegins(request, now: TransferStateMachineTests.now)?.repeatsSpentBodyStream == false)
            #expect(machine.currentBodyStreamIsSpent)
            #expect(machine.attemptBegins(request, now: TransferStateMachineTests.now)?.repeatsSpentBodyStream == true)
            // A new stream of the caller's may go; so may Conveyor's own, which start over.
            request.httpBodyStream = CallerStream(Data(count: 10))
            #expect(machine.attemptBegins(request, now: TransferStateMachineTests.now)?.repeatsSpentBodyStream == false)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-reuse-\(UUID().uuidString)")
            try Data(count: 10).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            request.httpBodyStream = try BodyFileStream(fileURL: file)
            #expect(machine.attemptBegins(request, now: TransferStateMachineTests.now)?.repeatsSpentBodyStream == false)
            #expect(machine.attemptBegins(request, now: TransferStateMachineTests.now)?.repeatsSpentBodyStream == false)
            #expect(!machine.currentBodyStreamIsSpent)
            _ = stream
        }

        @Test(
            "A 307 keeps the body: a caller's stream fails with requestBodyStreamExhausted, the target never gets a cut body",
            arguments: Route.allCases)
        func redirect(route: Route) async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            server.route("/r307") { _ in LocalHTTPServer.Response(status: 307, headers: ["Location": "/sink"]) }
            server.route("/sink") { request in .text("\(request.body.count)") }
            let client = Self.client(server, route)
            let request = Self.streamRequest(server, "r307", CallerStream(Self.body(300_000)))
            do {
                let response = try await client.response(for: request, responseSerializer: DataResponseSerializer())
                Issue.record("succeeded with \(String(decoding: response.data, as: UTF8.self)) bytes at the target")
            } catch {
                #expect(Self.isExhausted(error), "\(error)")
            }
            #expect(!server.receivedRequests.contains { $0.path == "/sink" })
        }

        @Test(
            "A Basic challenge answered with a credential: a caller's stream fails with requestBodyStreamExhausted",
            arguments: Route.allCases)
        func challenge(route: Route) async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let expected = Self.routeBasicChallenge(on: server)
            let client = Self.client(server, route)
            let body = Self.body(300_000)
            let request = Self.streamRequest(server, "auth", CallerStream(body))
            do {
                let response = try await client.response(for: request, responseSerializer: DataResponseSerializer()) {
                    $0.credential = URLCredential(user: "u", password: "p", persistence: .none)
                }
                // Sent whole on its one attempt (a transport that stamps the credential at once).
                #expect(response.data == Data("\(body.count)".utf8))
            } catch ConveyorError.authenticationFailed(let response, _) where route == .curl {
                // The curl transport does not answer a challenge it cannot send the body again for:
                // the 401 is the answer.
                #expect(response?.statusCode == 401)
            } catch {
                #expect(Self.isExhausted(error), "\(error)")
            }
            let authorized = server.receivedRequests.filter { $0.path == "/auth" && $0.headers["Authorization"] == expected }
            #expect(authorized.allSatisfy { $0.body == body }, "\(authorized.map(\.body.count))")
        }

        @Test(
            "pause() and resume() during the upload: a caller's stream fails with requestBodyStreamExhausted, never a short success",
            arguments: Route.allCases)
        func pauseResume(route: Route) async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            server.route("/sink") { request in .text("\(request.body.count)") }
            let client = Self.client(server, route)
            let body = Self.body(8 * 1024 * 1024)
            let request = Self.streamRequest(server, "sink", CallerStream(body))
            let paused = PausedOnce()
            do {
                let response = try await client.response(for: request, responseSerializer: DataResponseSerializer()) { operation in
                    operation.setUploadProgressBlock { [weak operation] _, sent, _ in
                        // Paused and resumed at once, on the progress callback's queue: the resume
                        // starts a new attempt, which is what the stream cannot serve.
                        guard sent > 512 * 1024, let operation, paused.first() else { return }
                        operation.pause()
                        operation.resume()
                    }
                }
                // The upload may have finished before the pause took: then it was sent whole.
                #expect(response.data == Data("\(body.count)".utf8))
            } catch {
                #expect(Self.isExhausted(error), "\(error)")
            }
            // A paused attempt's body ends mid-way, unterminated: the server records no request
            // for it. Any request it did record is the whole body.
            let received = server.receivedRequests.filter { $0.path == "/sink" }
            #expect(received.allSatisfy { $0.body == body }, "\(received.map(\.body.count))")
        }

        @Test(
            "A retry of a PUT whose stream was read reports the 503 it got, not requestBodyStreamExhausted; a retry with a new stream sends it whole",
            arguments: Route.allCases)
        func retry(route: Route) async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let hits = Lock(0)
            server.route("/flaky") { request in
                let hit = hits.withLock { count -> Int in
                    count += 1
                    return count
                }
                return hit == 1 ? LocalHTTPServer.Response(status: 503) : .text("\(request.body.count)")
            }
            let body = Self.body(300_000)
            var request = Self.streamRequest(server, "flaky", CallerStream(body))
            request.httpMethod = "PUT"
            // The default decision: the same request again, which its spent stream cannot serve.
            let plain = Self.client(server, route) { $0.retryPolicy = RetryPolicy(maximumAttempts: 3, baseDelay: 0.01) }
            do {
                _ = try await plain.response(for: request, responseSerializer: DataResponseSerializer())
                Issue.record("succeeded")
            } catch ConveyorError.unacceptableStatusCode(let status, _, _) {
                #expect(status == 503)
            }
            #expect(hits.withLock { $0 } == 1)
            hits.withLock { $0 = 0 }
            // A policy that sends the request again with a new stream of the same bytes.
            let renewing = Self.client(server, route) {
                $0.retryPolicy = RetryPolicy(maximumAttempts: 3, baseDelay: 0.01) { context, decided in
                    var again = context.request
                    again.httpBodyStream = CallerStream(body)
                    decided(.retry(after: 0, request: again))
                }
            }
            let response = try await renewing.response(
                for: request.withBodyStream(CallerStream(body)), responseSerializer: DataResponseSerializer())
            #expect(response.data == Data("\(body.count)".utf8))
            #expect(hits.withLock { $0 } == 2)
        }

        @Test(
            "A caller's stream whose read fails ends the upload with requestBodyStreamExhausted (on curl it read as a cancel)",
            arguments: Route.allCases)
        func failingStream(route: Route) async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            server.route("/sink") { request in .text("\(request.body.count)") }
            let client = Self.client(server, route)
            let request = Self.streamRequest(server, "sink", CallerStream(Self.body(2_000_000), failingAt: 1_000_000))
            do {
                let response = try await client.response(for: request, responseSerializer: DataResponseSerializer())
                Issue.record("succeeded with \(String(decoding: response.data, as: UTF8.self)) bytes")
            } catch {
                #expect(Self.isExhausted(error), "\(error)")
            }
        }

        @Test(
            "A stream whose read reports more than it was asked for fails the upload, never sends the extra bytes",
            arguments: [Route.curl, .pumped])
        func overReport(route: Route) async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            server.route("/sink") { request in .text("\(request.body.count)") }
            let client = Self.client(server, route)
            let request = Self.streamRequest(server, "sink", CallerStream(Self.body(500_000), overReport: 4096))
            do {
                let response = try await client.response(for: request, responseSerializer: DataResponseSerializer())
                Issue.record("succeeded with \(String(decoding: response.data, as: UTF8.self)) bytes")
            } catch {
                #expect(Self.isExhausted(error), "\(error)")
            }
        }
    }
}

/// A caller's own `InputStream` subclass over `data`, as a caller writes one: it cannot start
/// over. With `overReport`, each read claims that many bytes more than it was allowed (writing
/// only what fits): a broken stream; with `failingAt`, reads fail (-1) from that offset on.
private final class CallerStream: InputStream {
    // Not Sendable (no InputStream is): read by one transport at a time; its state sits behind a Lock anyway.
    private struct State {
        var position = 0
        var status: Stream.Status = .notOpen
    }
    private let data: Data
    private let overReport: Int
    private let failingAt: Int?
    private let state = Lock(State())

    init(_ data: Data, overReport: Int = 0, failingAt: Int? = nil) {
        self.data = data
        self.overReport = overReport
        self.failingAt = failingAt
        super.init(data: Data())
    }

    override func open() { state.withLock { if $0.status == .notOpen { $0.status = .open } } }
    override func close() { state.withLock { $0.status = .closed } }
    override var streamStatus: Stream.Status { state.withLock { $0.status } }
    override var streamError: (any Error)? { nil }
    override var hasBytesAvailable: Bool { state.withLock { $0.position < data.count } }
    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let address = UInt(bitPattern: buffer)
        return state.withLock { state in
            if let failingAt, state.position >= failingAt {
                state.status = .error
                return -1
            }
            let count = min(maxLength, data.count - state.position)
            guard count > 0 else {
                state.status = .atEnd
                return 0
            }
            data.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(bitPattern: address)!.copyMemory(from: bytes.baseAddress! + state.position, byteCount: count)
            }
            state.position += count
            return count + overReport
        }
    }
}

/// True the first time only.
private final class PausedOnce: Sendable {
    private let taken = Lock(false)
    func first() -> Bool {
        taken.withLock { taken in
            defer { taken = true }
            return !taken
        }
    }
}

extension URLRequest {
    /// The same request with another body stream.
    fileprivate func withBodyStream(_ stream: InputStream) -> URLRequest {
        var request = self
        request.httpBodyStream = stream
        return request
    }
}

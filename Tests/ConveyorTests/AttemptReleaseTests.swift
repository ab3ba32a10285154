import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension PumpThreadSuites {
    /// What an attempt holds below the operation (``AttemptRelease``): let go of once however the
    /// attempt ends, with the body's own failure reported in place of the error it caused. Among
    /// the pump's suites: one test runs a pump thread.
    @Suite("Attempt release: what an attempt holds is let go of once, the body's failure is what it reports")
    struct AttemptReleaseTests {
        /// Each completion heard, with how many holders the watched value had at that moment,
        /// and what `look` saw then.
        final class Heard: TransportTaskDelegate {
            struct Completion {
                let response: HTTPResponseHead?
                let error: (any Error)?
                let pins: Int
                let seen: [Int]
            }
            let watched: String
            let look: @Sendable () -> [Int]
            private let recorded = Lock<[Completion]>([])
            private let completion = AsyncStream.makeStream(of: Void.self)

            init(watching value: String = "", look: @escaping @Sendable () -> [Int] = { [] }) {
                watched = value
                self.look = look
            }

            var completions: [Completion] { recorded.withLock { $0 } }
            func completed() async { for await _ in completion.stream { return } }

            func transportDidReceive(response: HTTPResponseHead) {}
            func transportDidReceive(data: Data) {}
            func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
            func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
                (.cancelAuthenticationChallenge, nil)
            }
            func transportDidCollect(metrics: TransferMetrics) {}
            var transportWantsPause: Bool { false }
            func transportAwaitsConnection() {}
            func transportDidLeaveConnectionQueue() {}
            func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
                let pins = SentSecrets.shared.pinCount(watched)
                let seen = look()
                recorded.withLock { $0.append(Completion(response: response, error: error, pins: pins, seen: seen)) }
                completion.continuation.yield()
            }
        }

        static func secret() -> String { "attempt-secret-\(UUID().uuidString)" }

        @Test("The connection place goes back before the delegate hears the end, the pinned values after it; each once")
        func once() throws {
            let admission = ConnectionAdmission(limit: 1)
            let origin = try #require(Origin(URL(string: "http://release.test/")))
            final class Started: Sendable { let list = Lock<[Int]>([]) }
            let started = Started()
            admission.admit(origin, ticket: admission.makeTicket()) { started.list.withLock { $0.append(0) } }
            admission.admit(origin, ticket: admission.makeTicket()) { started.list.withLock { $0.append(1) } }
            admission.admit(origin, ticket: admission.makeTicket()) { started.list.withLock { $0.append(2) } }
            #expect(started.list.withLock { $0 } == [0])
            let value = Self.secret()
            let release = AttemptRelease()
            release.hold(admission: admission, origin: origin)
            release.pin([value])
            #expect(SentSecrets.shared.pinCount(value) == 1)
            let heard = Heard(watching: value) { started.list.withLock { $0 } }
            release.complete(heard, response: nil, error: URLError(.cancelled))
            // A second end (none is expected) reaches the delegate but lets nothing go again: the
            // place passed to the first waiter only, the value was unpinned once.
            release.complete(heard, response: nil, error: URLError(.cancelled))
            #expect(heard.completions.map(\.seen) == [[0, 1], [0, 1]])
            #expect(heard.completions.map(\.pins) == [1, 0])
            #expect(SentSecrets.shared.pinCount(value) == 0)
            #expect(started.list.withLock { $0 } == [0, 1])
        }

        @Test("An attempt never ended lets its pinned values go when its release goes (the backstop)")
        func backstop() {
            let value = Self.secret()
            do {
                let release = AttemptRelease()
                release.pin([value])
                #expect(SentSecrets.shared.pinCount(value) == 1)
            }
            #expect(SentSecrets.shared.pinCount(value) == 0)
        }

        /// A temporary file of `count` bytes, its snapshot and an open reader that failed (the file
        /// was cut after it was opened).
        static func failedFile() throws -> (OpenBodyFile, URL) {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("attempt-release-\(UUID().uuidString)")
            try Data(repeating: 0x41, count: 64).write(to: url)
            let file = try OpenBodyFile(BodyFile.Snapshot(of: url))
            try Data(repeating: 0x41, count: 8).write(to: url)
            var buffer = [UInt8](repeating: 0, count: 64)
            #expect(!buffer.withUnsafeMutableBytes { file.read(at: 0, into: $0.baseAddress!, count: 64) })
            #expect(file.failure != nil)
            return (file, url)
        }

        @Test("A failed body file is what a failed task reports; a task that succeeded keeps its answer")
        func fileFailure() throws {
            let (file, url) = try Self.failedFile()
            defer { try? FileManager.default.removeItem(at: url) }
            let head = HTTPResponseHead(url: url, statusCode: 200, headers: [:])
            let release = AttemptRelease()
            release.hold(uploadFile: file)
            #expect(release.uploadLength == 64)
            let heard = Heard()
            release.complete(heard, response: head, error: URLError(.unknown))
            release.complete(heard, response: head, error: nil)
            let completions = heard.completions
            #expect(completions.count == 2)
            #expect(completions[0].response == nil)
            #expect(
                (completions[0].error as? ConveyorError).map { if case .bodyFileFailed(.fileChanged) = $0 { true } else { false } } == true)
            #expect(completions[1].response?.statusCode == 200 && completions[1].error == nil)
        }

        @Test("A pumped body whose source failed is what the task reports, even an answer to the short body; its pump stops")
        func pumpFailure() async throws {
            let body = PumpedRequestBody(source: BodyStreamPumpTests.FailingStream(failingAfter: 0))
            let failed = DispatchSemaphore(value: 0)
            body.attach { failed.signal() }
            let stream = try #require(body.makeStream())
            #expect(failed.wait(timeout: .now() + 30) == .success)
            let release = AttemptRelease()
            release.hold(pump: body)
            #expect(release.pump === body)
            let heard = Heard()
            let head = HTTPResponseHead(url: URL(string: "http://release.test/")!, statusCode: 200, headers: [:])
            release.complete(heard, response: head, error: nil)
            let completion = try #require(heard.completions.first)
            #expect(completion.response == nil)
            #expect((completion.error as? URLError)?.code == .requestBodyStreamExhausted)
            // Stopped: it makes no more streams.
            #expect(body.makeStream() == nil)
            stream.close()
            #expect(await BodyStreamPumpTests.noPumpThreadLeft())
            // With a body file too, the file's failure is named (it is what failed the pump's source).
            let (file, url) = try Self.failedFile()
            defer { try? FileManager.default.removeItem(at: url) }
            let both = AttemptRelease()
            both.hold(pump: body)
            both.hold(uploadFile: file)
            both.complete(heard, response: head, error: nil)
            #expect((heard.completions.last?.error as? ConveyorError).map { if case .bodyFileFailed = $0 { true } else { false } } == true)
        }

        @Test(
            "Over a transport: a stamped cookie's value is pinned while the request runs and let go when it ends",
            arguments: HTTPClient.TransportKind.testedKinds)
        func stampedCookie(kind: HTTPClient.TransportKind) async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let held = HeldRoute(server)
            let value = Self.secret()
            var configuration = HTTPClient.Configuration.default
            configuration.transport = kind
            configuration.maximumConnectionsPerHost = 1
            let session = URLSessionConfiguration.ephemeral
            session.httpCookieStorage = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "conveyor-\(UUID().uuidString)")
            let url = server.baseURL.appendingPathComponent("hold")
            session.httpCookieStorage?.setCookie(
                try #require(HTTPCookie(properties: [.name: "sid", .value: value, .domain: url.host!, .path: "/"])))
            configuration.sessionConfiguration = session
            let transport = TransportFactory.make(for: configuration)
            defer { transport.invalidate() }
            let first = Heard(watching: value)
            _ = transport.startTask(for: URLRequest(url: url), bodyFile: nil, plan: AttemptPlan(idleTimeout: 60), delegate: first)
            await held.arrived()
            #expect(SentSecrets.shared.pinCount(value) == 1)
            // A second request to the origin: on URLSession (Linux) it waits for the one place,
            // and its cancel there ends it without a task; on curl libcurl queues it. Either way
            // its own pin goes with it.
            let second = Heard(watching: value)
            let waiting = transport.startTask(
                for: URLRequest(url: url), bodyFile: nil, plan: AttemptPlan(idleTimeout: 60), delegate: second)
            #expect(SentSecrets.shared.pinCount(value) == 2)
            waiting.cancel()
            await second.completed()
            #expect(second.completions.first?.pins == 2)
            #expect(SentSecrets.shared.pinCount(value) == 1)
            held.release()
            await first.completed()
            #expect(first.completions.first?.error == nil && first.completions.first?.pins == 1)
            #expect(SentSecrets.shared.pinCount(value) == 0)
        }
    }
}

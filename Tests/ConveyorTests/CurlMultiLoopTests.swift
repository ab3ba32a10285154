#if os(Linux)
    @testable import Conveyor
    import ConveyorLocking
    import ConveyorTesting
    import Foundation
    import Testing
    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The curl transport's multi handle changing hands: a caller drives it while it is idle, the
    /// loop thread while transfers run, and `invalidate()` stops the thread in either state.
    @Suite("Curl transport: the multi handle's hand-over between callers and the loop thread")
    struct CurlMultiLoopTests {
        /// Collects one transfer's outcome for a test to await.
        final class Outcome: TransportTaskDelegate, @unchecked Sendable {
            // @unchecked Sendable: `state` is the only mutable state, behind one Lock.
            private struct State {
                var status: Int?
                var body = Data()
                var result: Result<Int, any Error>?
                var waiter: CheckedContinuation<Result<Int, any Error>, Never>?
            }
            private let state = Lock(State())
            /// Signalled once per completion: the count a test waits on.
            private let completions = DispatchSemaphore(value: 0)

            func transportDidReceive(response: HTTPResponseHead) { state.withLock { $0.status = response.statusCode } }
            func transportDidReceive(data: Data) { state.withLock { $0.body.append(data) } }
            func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
            func transportDidCollect(metrics: TransferMetrics) {}
            var transportWantsPause: Bool { false }
            func transportAwaitsConnection() {}
            func transportDidLeaveConnectionQueue() {}
            func transportDisposition(for challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
                (.cancelAuthenticationChallenge, nil)
            }
            func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
                let waiter = state.withLock { state -> CheckedContinuation<Result<Int, any Error>, Never>? in
                    let result: Result<Int, any Error> = error.map { .failure($0) } ?? .success(state.status ?? 0)
                    state.result = result
                    defer { state.waiter = nil }
                    return state.waiter
                }
                completions.signal()
                if let waiter { waiter.resume(returning: state.withLock { $0.result! }) }
            }

            /// Whether the transfer completed exactly once: one completion arrives (within 30 s,
            /// which only ends a hang), and no second one within `grace` after it. A duplicate
            /// would come from the loop thread's same pass over curl's done messages or from the
            /// cancelling call itself, both well under a millisecond after the first; 0.3 s leaves
            /// room for a loaded machine while keeping 64 of them (run in parallel) short.
            func completedOnce(grace: Double = 0.3) async throws -> Bool {
                let semaphore = completions
                return try await offPool {
                    semaphore.wait(timeout: .now() + 30) == .success && semaphore.wait(timeout: .now() + grace) == .timedOut
                }
            }

            /// Whether a further completion arrives within `grace` (after those already counted).
            func completesAgain(within grace: Double) async throws -> Bool {
                let semaphore = completions
                return try await offPool { semaphore.wait(timeout: .now() + grace) == .success }
            }

            /// The status code, or the error the transfer ended with.
            func result() async -> Result<Int, any Error> {
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state -> Result<Int, any Error>? in
                        if state.result == nil { state.waiter = continuation }
                        return state.result
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            }

            var bodyCount: Int { state.withLock { $0.body.count } }
        }

        /// Runs `body` with a started test server and a curl transport of its own, then stops both.
        private func withTransport(_ body: (LocalHTTPServer, CurlTransport) async throws -> Void) async throws {
            let server = LocalHTTPServer()
            try server.start()
            defer { server.stop() }
            let library = try CurlLibrary.shared.get()
            let transport = CurlTransport(
                library: library, settings: .init(sessionConfiguration: .ephemeral, tls: .default, route: .direct, library: library))
            defer { transport.invalidate() }
            try await body(server, transport)
        }

        private func fetch(_ transport: CurlTransport, _ url: URL) async -> (Result<Int, any Error>, Int) {
            let (result, bytes, _) = await fetchCounted(transport, url)
            return (result, bytes)
        }

        /// `fetch`, and whether the transfer completed exactly once (see `completedOnce`).
        private func fetchCounted(_ transport: CurlTransport, _ url: URL) async -> (Result<Int, any Error>, Int, Bool) {
            let outcome = Outcome()
            _ = transport.startTask(for: URLRequest(url: url), bodyFile: nil, plan: AttemptPlan(idleTimeout: 60), delegate: outcome)
            let result = await outcome.result()
            return (result, outcome.bodyCount, (try? await outcome.completedOnce()) ?? false)
        }

        @Test("Requests one at a time (each started on an idle handle), then again after invalidate()")
        func idleThenInvalidated() async throws {
            try await withTransport { server, transport async throws in
                for _ in 0..<20 {
                    let (result, bytes) = await fetch(transport, server.baseURL.appendingPathComponent("bytes/1000"))
                    #expect(try result.get() == 200)
                    #expect(bytes == 1000)
                }
                // Stops the idle loop thread; the next request starts a new one.
                transport.invalidate()
                let (result, bytes) = await fetch(transport, server.baseURL.appendingPathComponent("bytes/500"))
                #expect(try result.get() == 200)
                #expect(bytes == 500)
            }
        }

        @Test("Many at once from many threads: every transfer completes once, with its own body")
        func concurrent() async throws {
            try await withTransport { server, transport async throws in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<64 {
                        group.addTask { () async throws in
                            let size = 100 + index
                            let (result, bytes, once) = await fetchCounted(
                                transport, server.baseURL.appendingPathComponent("bytes/\(size)"))
                            #expect(try result.get() == 200)
                            #expect(bytes == size)
                            #expect(once)
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }

        @Test(
            "Cancelled while the loop thread owns the handle: one cancellation; cancelled after finishing, on an idle handle: nothing more")
        func cancellation() async throws {
            try await withTransport { server, transport async throws in
                // Running: the loop thread owns the handle when the cancel arrives.
                let slow = Outcome()
                let task = transport.startTask(
                    for: URLRequest(url: server.baseURL.appendingPathComponent("delay/10")), bodyFile: nil,
                    plan: AttemptPlan(idleTimeout: 60), delegate: slow)
                task.cancel()
                #expect((await slow.result()).failureCode == .cancelled)
                #expect(try await slow.completedOnce())
                // Idle: the cancelling thread drives the handle itself; a finished transfer reports
                // nothing more.
                let late = Outcome()
                let finished = transport.startTask(
                    for: URLRequest(url: server.baseURL.appendingPathComponent("get")), bodyFile: nil, plan: AttemptPlan(idleTimeout: 60),
                    delegate: late)
                #expect(try (await late.result()).get() == 200)
                #expect(try await late.completedOnce())
                // After its one completion: a cancel reports nothing more (no second completion
                // within the grace) and leaves the result as it was.
                finished.cancel()
                #expect(try await late.completesAgain(within: 0.3) == false)
                #expect(try (await late.result()).get() == 200)
                let (result, _) = await fetch(transport, server.baseURL.appendingPathComponent("get"))
                #expect(try result.get() == 200)
            }
        }
    }

    extension Result where Failure == any Error {
        fileprivate var failureCode: URLError.Code? {
            if case .failure(let error) = self { return (error as? URLError)?.code }
            return nil
        }
    }
#endif

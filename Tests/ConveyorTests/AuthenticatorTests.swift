import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// One refresh for many requests: a bearer-token authenticator against a server that rotates
/// its tokens, on both transports.
@Suite("Authenticator: one credential refresh for many requests")
struct AuthenticatorTests {
    /// A server whose `/api` accepts only tokens `/token` has issued, and counts both.
    final class TokenServer: Sendable {
        /// What the routes share (a class, so the routes' closures can hold it).
        final class Shared: Sendable {
            let tokens = Lock<(valid: Set<String>, issued: Int)>(([], 0))
            /// Holds refusals of the expired token until this many requests carried it (0: none).
            let barrier: Lock<(expected: Int, arrived: Int)>
            let gate = DispatchSemaphore(value: 0)
            init(expected: Int) { barrier = Lock((expected, 0)) }
        }

        let server: LocalHTTPServer
        private let shared: Shared

        init(holdUntil expected: Int = 0, acceptsNewTokens: Bool = true) throws {
            server = try LocalHTTPServer.started()
            let shared = Shared(expected: expected)
            self.shared = shared
            server.route("/token", method: "POST") { _ in
                let token = shared.tokens.withLock { state -> String in
                    state.issued += 1
                    let token = "t\(state.issued)"
                    if acceptsNewTokens { state.valid.insert(token) }
                    return token
                }
                return .json(["access_token": token])
            }
            server.route("/api") { request in
                let token = request.headers["Authorization"]?.replacingOccurrences(of: "Bearer ", with: "") ?? ""
                if shared.tokens.withLock({ $0.valid.contains(token) }) { return .text("hello \(token)") }
                let (release, wait) = shared.barrier.withLock { barrier -> (Bool, Bool) in
                    guard barrier.expected > 0 else { return (false, false) }
                    barrier.arrived += 1
                    return (barrier.arrived == barrier.expected, true)
                }
                if release { for _ in 0..<shared.barrier.withLock({ $0.expected }) { shared.gate.signal() } }
                // 60 s only ends a hang: the 401s are held until every request of the batch has
                // arrived, which takes seconds on a loaded machine (10 s let early ones go alone).
                if wait { _ = shared.gate.wait(timeout: .now() + 60) }
                return LocalHTTPServer.Response.text("expired", status: 401).with(headers: ["WWW-Authenticate": "Bearer"])
            }
        }

        var tokensIssued: Int { shared.tokens.withLock { $0.issued } }
        deinit { server.stop() }
    }

    /// A bearer authenticator whose refresh posts to the server's `/token` with a client of its own.
    private static func authenticator(
        _ tokens: TokenServer, start: BearerTokenAuthenticator.Credential? = .init(accessToken: "t0"), timeout: TimeInterval = 30
    ) -> BearerTokenAuthenticator {
        let tokenClient = HTTPClient(baseURL: tokens.server.baseURL)
        return BearerTokenAuthenticator(credential: start, refreshTimeout: timeout) { _ in
            let reply = try await tokenClient.post("token").jsonObject
            return .init(accessToken: reply["access_token"] as? String ?? "", expiresAt: Date(timeIntervalSinceNow: 3600))
        }
    }

    private static func client(
        _ tokens: TokenServer, _ transport: HTTPClient.TransportKind, authenticator: any Authenticator, retry: RetryPolicy = .none
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.monitorsReachability = false
        configuration.maximumConcurrentOperations = 64
        configuration.maximumConnectionsPerHost = 64  // all 50 at the server at once
        configuration.authenticator = authenticator
        configuration.retryPolicy = retry
        return HTTPClient(baseURL: tokens.server.baseURL, configuration: configuration)
    }

    @Test(
        "50 concurrent requests with an expired token: one refresh, 100 API requests, all 50 succeed",
        arguments: HTTPClient.TransportKind.testedKinds)
    func coalescedRefresh(transport: HTTPClient.TransportKind) async throws {
        let tokens = try TokenServer(holdUntil: 50)
        let authenticator = Self.authenticator(tokens)
        let client = Self.client(tokens, transport, authenticator: authenticator, retry: .attempts(3))
        let operations = (0..<50).map { _ in
            client.operation(with: try! client.request(method: .get, path: "api"), success: nil, failure: nil)
        }
        let probes = operations.map { operation in
            let probe = CompletionProbe()
            probe.attach(to: operation)
            return probe
        }
        operations.forEach(client.enqueue)
        for probe in probes { #expect(await probe.outcome().data.map { String(decoding: $0, as: UTF8.self) } == "hello t1") }
        #expect(tokens.tokensIssued == 1 && authenticator.refreshCount == 1)
        #expect(tokens.server.requestCount(path: "/api") == 100 && tokens.server.requestCount(path: "/token") == 1)
        // A replay is not a retry attempt.
        #expect(operations.allSatisfy { $0.retryCount == 0 })
    }

    @Test("A token expiring within the window is refreshed before it is sent", arguments: HTTPClient.TransportKind.testedKinds)
    func refreshBeforeExpiry(transport: HTTPClient.TransportKind) async throws {
        let tokens = try TokenServer()
        let authenticator = Self.authenticator(tokens, start: .init(accessToken: "t0", expiresAt: Date(timeIntervalSinceNow: 30)))
        let client = Self.client(tokens, transport, authenticator: authenticator)
        let logged = NetworkLoggerTests.Capture(level: .debug, port: tokens.server.port)
        #expect(String(decoding: try await client.get("api"), as: UTF8.self) == "hello t1")
        #expect(tokens.server.receivedRequests.filter { $0.path == "/api" }.map { $0.headers["Authorization"] } == ["Bearer t1"])
        // The token never reaches a log line, whichever client sent what.
        #expect(!logged.lines.joined().contains("t1\"") && !logged.lines.joined().contains("Bearer t"))
    }

    @Test("A refresh that fails fails every waiting operation with one typed error", arguments: HTTPClient.TransportKind.testedKinds)
    func refreshFailure(transport: HTTPClient.TransportKind) async throws {
        struct TokenEndpointDown: Error {}
        let tokens = try TokenServer(holdUntil: 5)  // all five refused together: they wait for one refresh
        // The refresh fails only once all five asked for it: failing at once, it raced the
        // other 401s (a late one started a second refresh) and the count was 2 or 3 at times.
        let allAsked = Gate()
        let authenticator = BearerTokenAuthenticator(credential: .init(accessToken: "t0")) { _ in
            await allAsked.wait()
            throw TokenEndpointDown()
        }
        let counting = CountingAuthenticator(authenticator, opening: allAsked, after: 5)
        let client = Self.client(tokens, transport, authenticator: counting)
        let probes = (0..<5).map { _ in CompletionProbe() }
        for probe in probes { client.get("api", success: probe.success, failure: probe.failure) }
        for probe in probes {
            guard case .credentialRefreshFailed(.refreshFailed(let underlying))? = await probe.outcome().error else {
                Issue.record("expected credentialRefreshFailed")
                continue
            }
            #expect(underlying is TokenEndpointDown)
        }
        #expect(authenticator.refreshCount == 1)
    }

    @Test(
        "A 401 right after a fresh token is the answer: one replay per operation, no loop", arguments: HTTPClient.TransportKind.testedKinds)
    func noLoop(transport: HTTPClient.TransportKind) async throws {
        let tokens = try TokenServer(acceptsNewTokens: false)
        let authenticator = Self.authenticator(tokens)
        let client = Self.client(tokens, transport, authenticator: authenticator)
        await #expect {
            _ = try await client.get("api")
        } throws: { error in
            (error as? ConveyorError)?.statusCode == 401
                || { if case .authenticationFailed = error as? ConveyorError { true } else { false } }()
        }
        #expect(tokens.server.requestCount(path: "/api") == 2 && authenticator.refreshCount == 1)
    }

    @Test(
        "A refresh that never finishes is bounded by its timeout; a cancelled waiter leaves at once",
        arguments: HTTPClient.TransportKind.testedKinds)
    func refreshTimeoutAndCancel(transport: HTTPClient.TransportKind) async throws {
        let tokens = try TokenServer()
        let authenticator = BearerTokenAuthenticator(credential: nil, refreshTimeout: 0.5) { _ in
            try await Task.sleep(for: .seconds(30))
            return .init(accessToken: "never")
        }
        let client = Self.client(tokens, transport, authenticator: authenticator)
        let waiting = CompletionProbe()
        let cancelled = CompletionProbe()
        client.get("api", success: waiting.success, failure: waiting.failure)
        let leaving = client.get("api", success: cancelled.success, failure: cancelled.failure)
        leaving.cancel()
        #expect(await cancelled.outcome().error?.isCancelled == true)
        let outcome = await waiting.outcome().error
        guard case .credentialRefreshFailed(.timedOut(let after))? = outcome else {
            Issue.record("expected a refresh timeout, got \(String(describing: outcome))")
            return
        }
        #expect(after == 0.5)
        #expect(tokens.server.requestCount(path: "/api") == 0)
        #expect(await cancelled.settledCallCount == 1)
    }
}

/// Forwards to an authenticator and opens a gate once `count` refreshes were asked for.
final class CountingAuthenticator: Authenticator, Sendable {
    private let inner: any Authenticator
    private let gate: Gate
    private let count: Int
    private let asked = Lock(0)

    init(_ inner: any Authenticator, opening gate: Gate, after count: Int) {
        self.inner = inner
        self.gate = gate
        self.count = count
    }

    func apply(to request: inout URLRequest) -> String? { inner.apply(to: &request) }

    func requiresRefresh(_ response: HTTPResponseHead) -> Bool { inner.requiresRefresh(response) }

    func refresh(replacing credentialID: String?, completion: @escaping @Sendable (Result<Void, ConveyorError>) -> Void) {
        inner.refresh(replacing: credentialID, completion: completion)
        if asked.withLock({ value -> Bool in
            value += 1
            return value == count
        }) {
            gate.open()
        }
    }
}

/// Waits until opened; opening it twice is harmless.
final class Gate: Sendable {
    private let state = Lock<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// An operation built directly (`init(request:)`) and enqueued on a client runs with that
/// client's settings; a setting assigned on the operation wins.
@Suite("Client settings reach every operation enqueued on the client")
struct ClientSettingsTests {
    private func configuration(_ transport: HTTPClient.TransportKind, _ change: (inout HTTPClient.Configuration) -> Void = { _ in })
        -> HTTPClient.Configuration
    {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.monitorsReachability = false
        change(&configuration)
        return configuration
    }

    @Test(
        "A pinned client refuses a directly built operation to a server with another key", arguments: HTTPClient.TransportKind.testedKinds)
    func pinsApplyToDirectOperations(transport: HTTPClient.TransportKind) async throws {
        let server = try await TLSTestServer.shared()
        let client = HTTPClient(
            baseURL: server.baseURL,
            configuration: configuration(transport) {
                $0.tls.certificateAuthorities = [.pemFile(server.certificateAuthority)]
                $0.tls.pinnedPublicKeyHashes = [Data(repeating: 3, count: 32).base64EncodedString()]
            })
        let probe = CompletionProbe()
        let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("anything")))
        probe.attach(to: operation)
        client.enqueue(operation)
        guard case .serverTrustFailed(let host, let reason)? = await probe.outcome().error else {
            Issue.record("a directly built operation was not refused by the client's pins")
            return
        }
        // The pins' reason, not the default store's ("unable to get local issuer"): the
        // operation went through the client's transport. URLSession cannot check pins on Linux.
        #expect(host == "127.0.0.1")
        #expect(reason.lowercased().contains(transport == .curl ? "pinned" : "curl transport"))
    }

    @Test("A client's custom CA lets a directly built JSON operation through (curl: the transport that takes CAs on Linux)")
    func customAuthorityAppliesToDirectOperations() async throws {
        let server = try await TLSTestServer.shared()
        let client = HTTPClient(
            baseURL: server.baseURL,
            configuration: configuration(.curl) {
                $0.tls.certificateAuthorities = [.pemFile(server.certificateAuthority)]
            })
        let probe = CompletionProbe()
        let operation = JSONRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("anything")))
        operation.acceptableContentTypes = ["*/*"]
        operation.responseSerializer = .data
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().data.map { String(decoding: $0, as: UTF8.self) } == "secure")
    }

    @Test(
        "Retry policy, cache and callback queue of the client apply to a directly built operation",
        arguments: HTTPClient.TransportKind.testedKinds)
    func policiesApply(transport: HTTPClient.TransportKind) async throws {
        let queue = DispatchQueue(label: "test.client-callbacks")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let cache = HTTPCache(memoryCapacity: 1_000_000, diskCapacity: 0)
        let settings = configuration(transport) {
            $0.retryPolicy = RetryTests.quick(3)
            $0.callbackQueue = queue
            $0.cache = cache
        }
        try await withServer(configuration: settings) { server, client in
            RetryTests.sequence(server, path: "/flaky", statuses: [503])
            let onClientQueue = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("flaky")))
                operation.setCompletionBlock(
                    success: { _, _ in
                        continuation.resume(returning: DispatchQueue.getSpecific(key: key) == true)
                    }, failure: { _, error in continuation.resume(throwing: error) })
                client.enqueue(operation)
            }
            #expect(onClientQueue)
            #expect(server.requestCount(path: "/flaky") == 2)

            // The client's cache: the second directly built GET of a max-age response is not sent.
            for _ in 0..<2 {
                let probe = CompletionProbe()
                let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("cache/60")))
                probe.attach(to: operation)
                client.enqueue(operation)
                #expect(await probe.outcome().data != nil)
            }
            #expect(server.requestCount(path: "/cache/60") == 1)
        }
    }

    @Test("A setting assigned on the operation wins, even when it is the default value", arguments: HTTPClient.TransportKind.testedKinds)
    func assignedSettingsWin(transport: HTTPClient.TransportKind) async throws {
        try await withServer(configuration: configuration(transport) { $0.retryPolicy = RetryTests.quick(3) }) { server, client in
            RetryTests.sequence(server, path: "/flaky", statuses: [503])
            let probe = CompletionProbe()
            let operation = HTTPRequestOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("flaky")))
            operation.retryPolicy = .none  // the operation's own default, assigned: no retry
            probe.attach(to: operation)  // assigns the callback queue too
            client.enqueue(operation)
            #expect(await probe.outcome().error?.statusCode == 503)
            #expect(server.requestCount(path: "/flaky") == 1)
            #expect(probe.allOnQueue)
        }
    }

    @Test(
        "maximumConnectionsPerHost = 1: four concurrent requests share one connection, one at a time",
        arguments: HTTPClient.TransportKind.testedKinds)
    func connectionsPerHost(transport: HTTPClient.TransportKind) async throws {
        let settings = configuration(transport) { $0.maximumConnectionsPerHost = 1 }
        try await withServer(configuration: settings) { server, client in
            let held = HeldRoute(server)
            let probes = (0..<4).map { _ in CompletionProbe() }
            for probe in probes {
                let operation = client.operation(with: try client.request(method: .get, path: "hold"), success: nil, failure: nil)
                probe.attach(to: operation)
                client.enqueue(operation)
            }
            // Each request reaches the server only after the one before it was answered.
            for _ in probes {
                await held.arrived()
                #expect(server.acceptedConnectionCount == 1)
                held.release()
            }
            for probe in probes { #expect(await probe.outcome().error == nil) }
            #expect(server.acceptedConnectionCount == 1 && server.requestCount(path: "/hold") == 4)
        }
    }

    @Test("At 16 in flight with the default concurrency, the curl transport opens no new connection after a warm-up")
    func connectionsReused() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/small") { _ in .text(String(repeating: "x", count: 100)) }
        let client = HTTPClient(baseURL: server.baseURL, configuration: configuration(.curl))
        func burst(_ requests: Int) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<16 {
                    group.addTask { for _ in 0..<requests { _ = try await client.get("small") } }
                }
                try await group.waitForAll()
            }
        }
        try await burst(2)  // opens up to maximumConnectionsPerHost (6) connections
        let warm = server.acceptedConnectionCount
        let closedWarm = server.closedConnectionCount
        try await burst(25)  // 400 more requests, with quiet moments between operations
        // A loaded machine may warm up only 5 of the 6 (seen in a full parallel run: "5 then 6"):
        // the pool may still fill up to its size, but no connection ends, so none is reopened.
        let closed = server.closedConnectionCount - closedWarm
        #expect(warm <= 6 && server.acceptedConnectionCount <= 6, "\(warm) then \(server.acceptedConnectionCount)")
        #expect(closedWarm == 0 && closed == 0, "\(closedWarm) closed in the warm-up, \(closed) after it")
    }

    #if os(Linux)
        @Test("On Linux the URLSession transport opens 4 connections per host by default, all reused after a warm-up")
        func urlSessionConnectionsReused() async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            server.route("/small") { _ in .text(String(repeating: "x", count: 100)) }
            let client = HTTPClient(
                baseURL: server.baseURL, configuration: configuration(.urlSession) { $0.maximumConcurrentOperations = 16 })
            func burst(_ requests: Int) async throws {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<16 {
                        group.addTask { for _ in 0..<requests { _ = try await client.get("small") } }
                    }
                    try await group.waitForAll()
                }
            }
            try await burst(2)
            let warm = server.acceptedConnectionCount
            let closedWarm = server.closedConnectionCount
            for _ in 0..<4 { try await burst(10) }  // 640 more, with the lulls between bursts where corelibs drained
            // corelibs keeps 4 idle connections per transfer left in its multi handle: with 6 per
            // host it closed 2 at every lull and opened them again (25 → 203 per 2,000 requests).
            // 4 exactly: 16 requests in flight for 640 requests fill the pool to its size (a
            // loaded machine may need the later bursts for it, never more than 4).
            let closed = server.closedConnectionCount - closedWarm
            #expect(warm <= 4 && server.acceptedConnectionCount == 4, "\(warm) then \(server.acceptedConnectionCount)")
            #expect(closedWarm == 0 && closed == 0, "\(closedWarm) closed in the warm-up, \(closed) after it")
        }
    #endif

    @Test("The curl transport keeps a connection for each of 80 origins used round robin (its cache once held 64)")
    func connectionPerOrigin() async throws {
        let servers = try (0..<80).map { _ in try LocalHTTPServer.started() }
        defer { servers.forEach { $0.stop() } }
        let client = HTTPClient(baseURL: servers[0].baseURL, configuration: configuration(.curl))
        for _ in 0..<3 {
            for server in servers {
                _ = try await client.get(server.baseURL.appendingPathComponent("get").absoluteString)
            }
        }
        // Three rounds, one connection per origin: a cache smaller than the origins would have
        // closed the oldest for every request and opened 240.
        let opened = servers.map(\.acceptedConnectionCount)
        #expect(opened.allSatisfy { $0 == 1 }, "\(opened)")
    }

    @Test("operation(_:with:) builds any subclass with the client's settings, without enqueuing it")
    func typedOperationBuilder() async throws {
        let queue = DispatchQueue(label: "test.typed-builder")
        let settings = configuration(.automatic) {
            $0.retryPolicy = RetryTests.quick(4)
            $0.callbackQueue = queue
            $0.resourceTimeout = 7
        }
        try await withServer(configuration: settings) { server, client in
            let request = try client.request(method: .get, path: "json")
            let operation = client.operation(JSONRequestOperation.self, with: request)
            #expect(operation.retryPolicy.maximumAttempts == 4)
            #expect(operation.callbackQueue === queue)
            #expect(operation.resourceTimeout == 7)
            #expect(operation.state == .ready && client.operationQueue.operationCount == 0)
            let probe = CompletionProbe()
            probe.attach(to: operation)
            client.enqueue(operation)
            #expect(await probe.outcome().data != nil)
            #expect(operation.responseObject is [String: Any])
        }
    }
}

import ConveyorLocking
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Choosing a transport, and the curl transport's parts that a socket cannot show alone.
@Suite("Transports: selection, cookies, the curl transport's parsing and errors")
struct TransportTests {
    @Test(".automatic picks curl on Linux, URLSession for custom URLProtocols; CONVEYOR_TRANSPORT overrides")
    func selection() {
        let plain = URLSessionConfiguration.default
        #if os(Linux)
            #expect(TransportFactory.resolve(.automatic, sessionConfiguration: plain, environment: [:]) == .curl)
        #else
            #expect(TransportFactory.resolve(.automatic, sessionConfiguration: plain, environment: [:]) == .urlSession)
        #endif
        let stubbed = URLSessionConfiguration.ephemeral
        stubbed.protocolClasses = [StubURLProtocol.self] + (stubbed.protocolClasses ?? [])
        #expect(TransportFactory.resolve(.automatic, sessionConfiguration: stubbed, environment: [:]) == .urlSession)
        #expect(
            TransportFactory.resolve(.automatic, sessionConfiguration: plain, environment: ["CONVEYOR_TRANSPORT": "urlsession"])
                == .urlSession)
        #expect(TransportFactory.resolve(.automatic, sessionConfiguration: plain, environment: ["CONVEYOR_TRANSPORT": "curl"]) == .curl)
        #expect(
            TransportFactory.resolve(.urlSession, sessionConfiguration: plain, environment: ["CONVEYOR_TRANSPORT": "curl"]) == .urlSession)
    }

    #if os(Linux)
        @Test("A libcurl that cannot be loaded is reported with the loader's reason")
        func missingLibrary() {
            guard case .failure(let error) = CurlLibrary.load(names: ["libconveyor-missing-curl.so.4"]) else {
                Issue.record("a missing library loaded")
                return
            }
            #expect(error.description.contains("libconveyor-missing-curl.so.4"))
            #expect((try? CurlLibrary.shared.get()) != nil)
            // A client asking for curl then gets URLSession, and a note (on standard error in a
            // program; captured here, so that a passing run prints nothing alarming).
            var configuration = HTTPClient.Configuration()
            configuration.transport = .curl
            var notes: [String] = []
            #expect(TransportFactory.make(for: configuration, library: .failure(error)) { notes.append($0) } is URLSessionTransport)
            #expect(notes.count == 1 && notes.first?.contains("using URLSession") == true)
            #expect(TransportFactory.make(for: configuration) is CurlTransport)
        }

        @Test("Response heads: interim 100 skipped, folded lines joined, repeats merged, Latin-1 kept")
        func responseHead() throws {
            var head = CurlResponseHead()
            let lines = [
                "HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/1.1 201 Created\r\n", "X-Folded: one\r\n", "  two\r\n",
                "Vary: Accept\r\n", "vary: Cookie\r\n", "X-Name: caf\u{E9}\r\n",
            ]
            for line in lines {
                #expect(Array(line.utf8).withUnsafeBytes { head.consume($0) } == false)
            }
            let latin1: [UInt8] = Array("X-Latin: caf".utf8) + [0xE9] + Array("\r\n".utf8)
            #expect(latin1.withUnsafeBytes { head.consume($0) } == false)
            #expect(Array("\r\n".utf8).withUnsafeBytes { head.consume($0) } == true)
            let response = try #require(head.response(for: URL(string: "http://example.com/")!))
            #expect(response.statusCode == 201)
            #expect(response.value(forHTTPHeaderField: "X-Folded") == "one two")
            #expect(response.value(forHTTPHeaderField: "Vary") == "Accept, Cookie")
            #expect(response.value(forHTTPHeaderField: "X-Name") == "caf\u{E9}")
            #expect(response.value(forHTTPHeaderField: "X-Latin") == "caf\u{E9}")
        }

        @Test("A large response head merges repeated fields the same way (it is indexed, not compared pairwise)")
        func largeResponseHead() throws {
            var head = CurlResponseHead()
            var lines = ["HTTP/1.1 200 OK\r\n", "Vary: Accept\r\n"]
            lines += (0..<40).map { "X-Field-\($0): \($0)\r\n" }
            lines += ["VARY: Cookie\r\n", "x-field-7: again\r\n", "\r\n"]
            for line in lines.dropLast() {
                #expect(Array(line.utf8).withUnsafeBytes { head.consume($0) } == false)
            }
            #expect(Array(lines.last!.utf8).withUnsafeBytes { head.consume($0) } == true)
            let response = try #require(head.response(for: URL(string: "http://example.com/")!))
            #expect(response.headers.count == 41)
            #expect(response.urlResponse.allHeaderFields.count == 41)
            #expect(response.value(forHTTPHeaderField: "Vary") == "Accept, Cookie")
            #expect(response.value(forHTTPHeaderField: "X-Field-7") == "7, again")
            #expect(response.value(forHTTPHeaderField: "X-Field-39") == "39")
        }

        @Test("libcurl result codes become the URLError codes URLSession uses; a pin mismatch is serverTrustFailed")
        func errors() {
            let url = URL(string: "https://api.example.com/x")!
            func code(_ curl: Int32, _ text: String = "") -> URLError.Code? {
                (CurlErrors.error(for: curl, text: text, url: url) as? URLError)?.code
            }
            #expect(code(6) == .cannotFindHost)
            #expect(code(7) == .cannotConnectToHost)
            #expect(code(28) == .timedOut)
            #expect(code(52) == .networkConnectionLost)
            #expect(code(56, "Illegal or missing hexadecimal sequence in chunked-encoding") == .badServerResponse)
            // Peer verification is a trust decision, made by the transport (not an URLError for the operation to read).
            #expect(code(60) == nil)
            #expect(CurlErrors.urlErrorCode(for: 60) == .serverCertificateUntrusted)
            if case .serverTrustFailed(let host, _) = CurlErrors.error(for: 60, text: "SSL certificate problem", url: url) as? ConveyorError
            {
                #expect(host == "api.example.com")
            } else {
                Issue.record("peer verification was not serverTrustFailed")
            }
            #expect(code(61) == .cannotDecodeContentData)
            guard
                case .serverTrustFailed(let host, let reason) = CurlErrors.error(
                    for: 90, text: "SSL: public key does not match pinned public key", url: url) as? ConveyorError
            else {
                Issue.record("a pin mismatch was not serverTrustFailed")
                return
            }
            #expect(host == "api.example.com")
            #expect(reason.contains("pinned"))
        }
    #endif

    @Test("Set-Cookie values: joined lists split outside Expires dates; Max-Age before Expires; Netscape dates")
    func cookieParsing() {
        let joined = "a=1; Path=/, b=2; Expires=Thu, 01-Jan-1970 00:00:00 GMT; Path=/, c=3"
        #expect(TransportCookies.split(joined) == ["a=1; Path=/", "b=2; Expires=Thu, 01-Jan-1970 00:00:00 GMT; Path=/", "c=3"])
        let now = Date()
        #expect(TransportCookies.expiry(of: "a=1; Max-Age=0", now: now) == .distantPast)
        #expect(
            TransportCookies.expiry(of: "a=1; Max-Age=60; Expires=Thu, 01 Jan 1970 00:00:00 GMT", now: now) == now.addingTimeInterval(60))
        #expect(TransportCookies.expiry(of: "a=1; Path=/", now: now) == nil)
        #expect(TransportCookies.cookieDate("Thu, 01-Jan-70 00:00:10 GMT") == Date(timeIntervalSince1970: 10))
        #expect(TransportCookies.cookieDate("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("The curl transport takes its proxy from http_proxy, as the curl command does (in a child process)")
    func environmentProxy() async throws {
        #if os(Linux)
            let proxy = try LocalHTTPServer.started()
            defer { proxy.stop() }
            var environment = ProcessInfo.processInfo.environment
            environment["http_proxy"] = proxy.baseURL.absoluteString
            environment["no_proxy"] = ""
            environment["CONVEYOR_TRANSPORT"] = nil
            let output = try await HelperProcess.output(["proxy-get", "http://conveyor-proxy-test.invalid/"], environment: environment)
            // The name does not resolve: only the proxy can have answered.
            #expect(output.hasPrefix("status "), "\(output)")
            #expect(!output.contains("cannotFindHost") && !output.contains("-1003"), "\(output)")
            let request = try #require(proxy.receivedRequests.first)
            #expect(request.target == "http://conveyor-proxy-test.invalid/proxied")
            #expect(request.headers["Host"] == "conveyor-proxy-test.invalid")
        #endif
    }

    @Test("Metrics of a plain-HTTP exchange: phases in order, no TLS, the second request reuses the connection")
    func metrics() async throws {
        #if os(Linux)
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            var configuration = HTTPClient.Configuration.default
            configuration.transport = .curl
            configuration.cache = nil
            configuration.monitorsReachability = false
            let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
            _ = try await client.response(method: .get, path: "get")
            let second = try await client.response(method: .get, path: "get")
            let metrics = try #require(second.metrics.transfer)
            #expect(metrics.httpVersion == "HTTP/1.1")
            #expect(metrics.secureConnection == nil)
            #expect(metrics.reusedConnection)
            #expect(metrics.remoteAddress == "127.0.0.1")
            #expect(
                metrics.domainLookup <= metrics.connect && metrics.connect <= metrics.firstByte && metrics.firstByte <= metrics.lastByte)
            #expect(metrics.lastByte > 0)
        #endif
    }
}

/// The shared timer thread behind idle, resource and retry timers.
@Suite("Deadline scheduler")
struct DeadlineSchedulerTests {
    final class Fired: Sendable {
        private let names = Lock<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    @Test("Earlier deadlines fire first even when armed later; cancelled and released timers never fire; a handler can re-arm")
    func ordering() async throws {
        let fired = Fired()
        let done = DispatchSemaphore(value: 0)
        let scheduler = DeadlineScheduler.shared
        let late = scheduler.schedule(after: 1.0) {
            fired.add("late")
            done.signal()
        }
        let cancelled = scheduler.schedule(after: 0.05) { fired.add("cancelled") }
        cancelled.cancel()
        _ = scheduler.schedule(after: 0.05) { fired.add("released") }  // released at once
        let rearmedBox = Lock<DeadlineTimer?>(nil)
        let count = Lock(0)
        let rearmed = scheduler.schedule(after: 0.02) {
            let run = count.withLock { count -> Int in
                count += 1
                return count
            }
            fired.add("rearmed \(run)")
            if run < 2 { rearmedBox.withLock { $0?.schedule(after: 0.02) } }
        }
        rearmedBox.withLock { $0 = rearmed }
        let waited: Bool = await withCheckedContinuation { continuation in
            // Not a hang: the timers are due within 0.1 s; 60 s leaves a loaded machine room.
            Thread.detachNewThread { continuation.resume(returning: done.wait(timeout: .now() + 60) == .success) }
        }
        #expect(waited)
        #expect(fired.all == ["rearmed 1", "rearmed 2", "late"])
        withExtendedLifetime((late, rearmed)) {}
    }

    @Test("A fired timer is not fired again when cancellations make the scheduler rebuild its heap")
    func rebuildKeepsFiredTimersQuiet() async throws {
        let scheduler = DeadlineScheduler.shared
        let count = Lock(0)
        let firedOnce = DispatchSemaphore(value: 0)
        let timer = scheduler.schedule(after: 0.01) {
            count.withLock { $0 += 1 }
            firedOnce.signal()
        }
        await Self.wait(for: firedOnce)
        // Enough cancelled timers to trigger a rebuild (more than 1024 entries, 4x the live ones).
        for _ in 0..<3000 { scheduler.schedule(after: 3600) {}.cancel() }
        // Deadlines fire in order: a resurrected (already due) entry would fire before this one.
        let sentinel = DispatchSemaphore(value: 0)
        let probe = scheduler.schedule(after: 0.05) { sentinel.signal() }
        await Self.wait(for: sentinel)
        #expect(count.withLock { $0 } == 1)
        withExtendedLifetime((timer, probe)) {}
    }

    private static func wait(for semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                _ = semaphore.wait(timeout: .now() + 60)  // not a hang: the timer is due within 0.05 s
                continuation.resume()
            }
        }
    }
}

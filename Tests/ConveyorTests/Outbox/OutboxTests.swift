import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

@Suite("Outbox: delivery, retries, limits and files", .timeLimit(.notAHang))
struct OutboxTests {
    struct Note: Codable {
        let index: Int
        let text: String
    }

    /// Quick retries, so tests take milliseconds.
    static func quick(_ configure: (inout Outbox.Configuration) -> Void = { _ in }) -> Outbox.Configuration {
        var configuration = Outbox.Configuration.default
        configuration.baseDelay = 0.01
        configuration.maximumDelay = 0.05
        configure(&configuration)
        return configuration
    }

    @Test(
        "Items wait on disk until a consumer registers, then go in order, each with its own Idempotency-Key, and leave no file",
        arguments: HTTPClient.TransportKind.testedKinds)
    func deliversInOrder(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let client = testClient(server, transport)
        client.setDefaultHeader("Authorization", value: "Bearer fresh")
        let outbox = try client.outbox(directory: directory.url, configuration: Self.quick())
        var ids: [UUID] = []
        for index in 0..<5 {
            ids.append(
                try await outbox.send(
                    method: .post, path: "apply", body: Note(index: index, text: "on the train"), requestSerializer: .json))
        }
        #expect(outbox.pendingCount == 5 && directory.names(in: "items").count == 5)  // small bodies live in their record
        #expect(server.receivedRequests.isEmpty)  // no consumer, nothing sent
        let log = ResultLog(outbox)
        let results = await log.first(5)
        #expect(results.map(\.id) == ids)
        for result in results {
            guard case .succeeded(let response) = result.outcome else {
                Issue.record("\(result.outcome)")
                continue
            }
            #expect(response.statusCode == 201 && !result.isRedelivery)
            #expect(result.item?.headers["Idempotency-Key"] == result.id.idempotencyKey)
        }
        #expect(inbox.order == ids.map(\.idempotencyKey))
        let sent = server.receivedRequests.filter { $0.path == "/apply" }
        #expect(sent.map { (try? JSONDecoder().decode(Note.self, from: $0.body).index) ?? -1 } == [0, 1, 2, 3, 4])
        // The client's headers are added when sent, and never written to the outbox's files.
        #expect(sent.allSatisfy { $0.headers["Authorization"] == "Bearer fresh" }, "\(sent.first?.headers ?? [:])")
        #expect(sent.allSatisfy { $0.headers["Content-Type"]?.hasPrefix("application/json") == true })
        outbox.settle()
        #expect(outbox.pendingCount == 0 && outbox.pendingBytes == 0)
        #expect(directory.names(in: "items").isEmpty && directory.names(in: "dead").isEmpty)
    }

    @Test("A record left renamed .reported (the process died while a handler had its result) is sent again and flagged")
    func redelivery() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        var id = UUID()
        do {
            let outbox = try testClient(server, .curl).outbox(directory: directory.url)
            id = try await outbox.send(method: .post, path: "apply", body: ["n": 1], requestSerializer: .json)
            outbox.close()
        }
        let items = directory.url.appendingPathComponent("items")
        let record = try #require(directory.names(in: "items").first)
        try FileManager.default.moveItem(
            at: items.appendingPathComponent(record), to: items.appendingPathComponent(record.trimmingSuffix(".item") + ".reported"))
        let outbox = try testClient(server, .curl).outbox(directory: directory.url)
        #expect(outbox.pendingCount == 1)
        let result = try #require(await ResultLog(outbox).first(1).first)
        #expect(result.id == id && result.isRedelivery && inbox.order == [id.idempotencyKey])
        outbox.settle()
        #expect(directory.names(in: "items").isEmpty)
    }

    @Test(
        "Multipart and file bodies are copied into the outbox and uploaded from it; results come through the AsyncSequence",
        arguments: HTTPClient.TransportKind.testedKinds)
    func bodiesAndSequence(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/upload") { request in .text("\(request.bodyLength)", status: 201) }
        let directory = try TemporaryDirectory()
        let source = directory.url.appendingPathComponent("reading.bin")
        let bytes = FileDownloadTests.pattern(3 << 20)
        try bytes.write(to: source)
        let outbox = try testClient(server, transport).outbox(directory: directory.url.appendingPathComponent("box"))
        let file = try await outbox.send(method: .put, path: "upload", fileURL: source)
        try FileManager.default.removeItem(at: source)  // the outbox has its own copy
        let form = try await outbox.send(path: "upload", parameters: ["station": "Basel"]) { form in
            form.append(data: Data("42.1".utf8), name: "reading", fileName: "r.txt", mimeType: "text/plain")
        }
        var results = outbox.results.makeAsyncIterator()
        let first = try #require(await results.next())
        let second = try #require(await results.next())
        #expect(first.id == file && second.id == form)
        guard case .succeeded(let fileResponse) = first.outcome, case .succeeded(let formResponse) = second.outcome else {
            Issue.record("\(first.outcome) \(second.outcome)")
            return
        }
        #expect(String(decoding: fileResponse.data, as: UTF8.self) == "\(bytes.count)")
        #expect(formResponse.statusCode == 201)
        let uploads = server.receivedRequests.filter { $0.path == "/upload" }
        #expect(uploads.first?.body == bytes && uploads.first?.method == "PUT")
        #expect(uploads.first?.headers["Content-Type"] == "application/octet-stream")
        let parts = try #require(try uploads.last?.multipartParts())
        #expect(parts.map(\.name) == ["station", "reading"] && parts.last?.body == Data("42.1".utf8))
    }

    @Test("503 with Retry-After, then 500, then 201: one item, one key on every attempt, two attempts counted")
    func retries() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let calls = Lock(0)
        server.route("/flaky") { request in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            switch call {
            case 1: return .init(status: 503, headers: ["Retry-After": "0"])
            case 2: return .init(status: 500)
            default: return .text("ok", status: 201)
            }
        }
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: Self.quick())
        let id = try await outbox.send(method: .post, path: "flaky", parameters: ["a": "1"])
        let log = ResultLog(outbox)
        let result = try #require(await log.first(1).first)
        guard case .succeeded(let response) = result.outcome else { return #expect(Bool(false), "\(result.outcome)") }
        #expect(response.statusCode == 201 && result.item?.attempts == 2)
        let keys = server.receivedRequests.filter { $0.path == "/flaky" }.map { $0.headers["Idempotency-Key"] }
        #expect(keys == Array(repeating: id.idempotencyKey, count: 3))
    }

    @Test("retryNow sends an item waiting out a long backoff at once, as one more attempt under the same key")
    func retryNow() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let calls = Lock(0)
        let failed = EventCount()
        server.route("/later") { _ in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            if call == 1 {
                failed.increment()
                return .init(status: 503)
            }
            return .text("ok", status: 201)
        }
        var configuration = Self.quick()
        // An hour's backoff: without retryNow the item would not be tried again in the test's time.
        configuration.baseDelay = 3600
        configuration.maximumDelay = 3600
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: configuration)
        let id = try await outbox.send(method: .post, path: "later", parameters: ["a": "1"])
        let log = ResultLog(outbox)
        await failed.wait(atLeast: 1)
        // The 503 is on its way back: whether retryNow finds the item waiting out its backoff or
        // its attempt still under way, the next attempt goes at once.
        outbox.retryNow()
        let result = try #require(await log.first(1).first)
        guard case .succeeded(let response) = result.outcome else { return #expect(Bool(false), "\(result.outcome)") }
        #expect(response.statusCode == 201 && result.item?.attempts == 1)
        let keys = server.receivedRequests.filter { $0.path == "/later" }.map { $0.headers["Idempotency-Key"] }
        #expect(keys == [id.idempotencyKey, id.idempotencyKey])
        #expect(outbox.pendingCount == 0)
        outbox.close()
    }

    @Test(
        "Retry-After is waited for as the server saw it: 1 s honoured, 3,600 s capped by maximumRetryAfter",
        arguments: [(retryAfter: "1", cap: 3600.0, wait: 1.0), (retryAfter: "3600", cap: 0.4, wait: 0.4)])
    func retryAfterDelay(retryAfter: String, cap: TimeInterval, wait: TimeInterval) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        // When each attempt arrived, on the server's clock (the handler runs once per request).
        let arrivals = Lock<[ContinuousClock.Instant]>([])
        server.route("/later") { _ in
            let count = arrivals.withLock { arrivals -> Int in
                arrivals.append(.now)
                return arrivals.count
            }
            return count == 1 ? .init(status: 503, headers: ["Retry-After": retryAfter]) : .text("ok", status: 201)
        }
        let directory = try TemporaryDirectory()
        // The backoff (at most 0.05 s here) is far below the wait: only Retry-After explains it.
        let outbox = try testClient(server, .curl).outbox(
            directory: directory.url, configuration: Self.quick { $0.maximumRetryAfter = cap })
        try await outbox.send(method: .post, path: "later")
        let log = ResultLog(outbox)
        // Bounded: an uncapped 3,600 s would end here, not at the suite's time limit. 30 s is
        // no timing claim, only a wait no loaded machine reaches for a 0.4 s cap.
        let first: Outbox.ItemResult? = await withCheckedContinuation { continuation in
            let pending = Lock<CheckedContinuation<Outbox.ItemResult?, Never>?>(continuation)
            let resume: @Sendable (Outbox.ItemResult?) -> Void = { value in
                pending.withLock { pending -> CheckedContinuation<Outbox.ItemResult?, Never>? in
                    defer { pending = nil }
                    return pending
                }?.resume(returning: value)
            }
            Task { resume(await log.first(1).first) }
            Task {
                try? await Task.sleep(for: .seconds(30))
                resume(nil)
            }
        }
        let result = try #require(first, "no result within 30 s: Retry-After \(retryAfter) was not capped at \(cap) s")
        guard case .succeeded(let response) = result.outcome else { return #expect(Bool(false), "\(result.outcome)") }
        #expect(response.statusCode == 201)
        let times = arrivals.withLock { $0 }
        try #require(times.count == 2)
        // A lower bound only: load can lengthen the gap, never shorten it.
        #expect(times[1] - times[0] >= .seconds(wait), "attempts \(times[1] - times[0]) apart")
    }

    @Test("A 4xx is final: reported as failed and removed; the next item goes on")
    func finalFailure() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/reject") { _ in .text("no", status: 422) }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: Self.quick())
        try await outbox.send(method: .post, path: "reject")
        let good = try await outbox.send(method: .post, path: "apply")
        let results = await ResultLog(outbox).first(2)
        guard case .failed(let error) = results[0].outcome else { return #expect(Bool(false), "\(results[0].outcome)") }
        #expect(error.statusCode == 422 && server.requestCount(path: "/reject") == 1)
        #expect(results[1].id == good && inbox.effects.count == 1)
        outbox.settle()
        #expect(directory.names(in: "items").isEmpty && directory.names(in: "dead").isEmpty)
    }

    @Test("Attempts run out: the item becomes a dead letter, can be inspected, retried and removed")
    func deadLetters() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let healthy = Lock(false)
        server.route("/sometimes") { _ in healthy.withLock { $0 } ? .text("ok", status: 201) : .init(status: 500) }
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(
            directory: directory.url, configuration: Self.quick { $0.maximumAttempts = 3 })
        let id = try await outbox.send(method: .post, path: "sometimes", body: ["n": 1], requestSerializer: .json)
        let log = ResultLog(outbox)
        let first = try #require(await log.first(1).first)
        guard case .deadLettered(.outboxFailed(.attemptsExhausted(3, let last))) = first.outcome else {
            return #expect(Bool(false), "\(first.outcome)")
        }
        #expect((last as? ConveyorError)?.statusCode == 500 && server.requestCount(path: "/sometimes") == 3)
        outbox.settle()
        let dead = try outbox.deadLetters()
        #expect(dead.map(\.id) == [id] && dead.first?.attempts == 3 && dead.first?.lastError?.contains("500") == true)
        #expect(dead.first?.body == Data(#"{"n":1}"#.utf8) && dead.first?.bodyFile == nil)
        #expect(outbox.pendingCount == 0 && directory.names(in: "items").isEmpty)
        healthy.withLock { $0 = true }
        try outbox.retryDeadLetter(id)
        let second = try #require(await log.first(2).last)
        guard case .succeeded = second.outcome else { return #expect(Bool(false), "\(second.outcome)") }
        #expect(second.id == id && server.receivedRequests.last?.headers["Idempotency-Key"] == id.idempotencyKey)
        outbox.settle()
        #expect(try outbox.deadLetters().isEmpty && directory.names(in: "dead").isEmpty)
        #expect { try outbox.removeDeadLetter(id) } throws: { error in
            guard case .outboxFailed(.noSuchItem(id))? = error as? ConveyorError else { return false }
            return true
        }
    }

    @Test("An item older than maximumAge is a dead letter without being sent")
    func expiry() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: Self.quick { $0.maximumAge = 0 })
        try await outbox.send(method: .post, path: "apply")
        let result = try #require(await ResultLog(outbox).first(1).first)
        guard case .deadLettered(.outboxFailed(.expired)) = result.outcome else { return #expect(Bool(false), "\(result.outcome)") }
        #expect(server.receivedRequests.isEmpty && directory.names(in: "dead").filter { $0.hasSuffix(".item") }.count == 1)
    }

    @Test("Server down: failing to connect uses no attempt; the items go, in order, once it is back on its port")
    func serverDown() async throws {
        // The port refuses connections until the server takes it over (held meanwhile, so no
        // other suite's server is given it).
        let refused = try RefusedPort()
        let port = refused.port
        let directory = try TemporaryDirectory()
        var configuration = HTTPClient.Configuration.default
        configuration.monitorsReachability = false
        configuration.cache = nil
        let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:\(port)/")!, configuration: configuration)
        // One attempt only: had the refused connections counted, the items would be dead letters.
        let outbox = try client.outbox(directory: directory.url, configuration: Self.quick { $0.maximumAttempts = 1 })
        let ids = try (0..<3).map { try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["n": $0]) }
        // Only this outbox's operations count (other suites finish operations in parallel):
        // those for the refused port.
        let refusals = EventCount()
        let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidFinish, object: nil, queue: nil) { note in
            guard let operation = note.object as? HTTPRequestOperation, operation.request.url?.port == port else { return }
            refusals.increment()
        }
        let log = ResultLog(outbox)
        await refusals.wait(atLeast: 3)
        NotificationCenter.default.removeObserver(observer)
        #expect(log.results.isEmpty && outbox.pendingCount == 3)
        // The route goes in before the server listens: the outbox retries the port meanwhile and
        // may reach it the moment it listens (seen under load: the first item answered 404, its
        // key missing from the inbox's order).
        var installed: IdempotentInbox?
        let server = try refused.takeOver { installed = IdempotentInbox($0) }
        defer { server.stop() }
        let inbox = try #require(installed)
        let results = await log.first(3)
        #expect(results.map(\.id) == ids)
        #expect(inbox.order == ids.map(\.idempotencyKey), "server saw \(inbox.order) for \(ids.map(\.idempotencyKey))")
        #expect(results.allSatisfy { $0.item?.attempts == 0 })
    }

    @Test("Unreachable: nothing is attempted until reachability says the host is back, then the items drain in order")
    func unreachable() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let scripted = ScriptedReachability()
        scripted.set(.notReachable)
        let client = testClient(server, .curl) {
            $0.monitorsReachability = true
            $0.reachabilityProbe = scripted
            $0.reachabilityEvents = scripted
        }
        let statuses = ReachabilityTests.Statuses()
        client.setReachabilityStatusChangeHandler(statuses.handler)
        #expect(await statuses.next() == .notReachable)
        let directory = try TemporaryDirectory()
        let outbox = try client.outbox(directory: directory.url, configuration: Self.quick())
        let ids = try (0..<3).map { try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["n": $0]) }
        let log = ResultLog(outbox)
        outbox.settle()  // the first item was taken and parked
        #expect(outbox.waitingForNetworkCount == 1 && server.receivedRequests.isEmpty)
        scripted.set(.reachable(.ethernetOrWiFi))
        let results = await log.first(3)
        #expect(results.map(\.id) == ids)
        #expect(inbox.order == ids.map(\.idempotencyKey), "server saw \(inbox.order) for \(ids.map(\.idempotencyKey))")
        #expect(results.allSatisfy { $0.item?.attempts == 0 })
    }

    @Test(
        "Back from a long offline spell: the client's authenticator refreshes the expired token first; no token is in the files",
        arguments: HTTPClient.TransportKind.testedKinds)
    func expiredToken(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/apply") { request in
            request.headers["Authorization"] == "Bearer fresh" ? .text("ok", status: 201) : .init(status: 401)
        }
        let refreshes = Lock(0)
        let expired = BearerTokenAuthenticator.Credential(accessToken: "stale", expiresAt: Date(timeIntervalSinceNow: -3600))
        let authenticator = BearerTokenAuthenticator(credential: expired) { _ in
            refreshes.withLock { $0 += 1 }
            return .init(accessToken: "fresh", expiresAt: Date(timeIntervalSinceNow: 3600))
        }
        let client = testClient(server, transport) { $0.authenticator = authenticator }
        let directory = try TemporaryDirectory()
        let outbox = try client.outbox(directory: directory.url, configuration: Self.quick())
        try await outbox.send(method: .post, path: "apply", body: ["n": 1], requestSerializer: .json)
        let record = try Data(
            contentsOf: directory.url.appendingPathComponent("items").appendingPathComponent(directory.names(in: "items")[0]))
        #expect(!String(decoding: record, as: UTF8.self).contains("stale") && !String(decoding: record, as: UTF8.self).contains("Bearer"))
        let result = try #require(await ResultLog(outbox).first(1).first)
        guard case .succeeded(let response) = result.outcome else { return #expect(Bool(false), "\(result.outcome)") }
        #expect(response.statusCode == 201 && refreshes.withLock { $0 } == 1)
        #expect(server.receivedRequests.filter { $0.path == "/apply" }.map { $0.headers["Authorization"] } == ["Bearer fresh"])
    }

    @Test("Limits: past the item count or the bytes, send throws and the items already accepted are delivered")
    func limits() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(
            directory: directory.url,
            configuration: Self.quick {
                $0.maximumItemCount = 2
                $0.maximumBytes = 1000
            })
        let big = String(repeating: "x", count: 2000)
        #expect { try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["pad": big]) } throws: { error in
            guard case .outboxFailed(.byteLimitReached(1000, _))? = error as? ConveyorError else { return false }
            return true
        }
        let ids = try (0..<2).map { try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["n": $0]) }
        #expect { try outbox.sendSynchronously(method: .post, path: "apply") } throws: { error in
            guard case .outboxFailed(.itemLimitReached(2))? = error as? ConveyorError else { return false }
            return true
        }
        #expect(outbox.pendingCount == 2 && directory.names(in: "items").count == 2)
        let results = await ResultLog(outbox).first(2)
        #expect(results.map(\.id) == ids && inbox.effects.count == 2)
    }

    @Test("A full disk: send throws writeFailed, leaves no partial file, and the items accepted before are delivered")
    func fullDisk() async throws {
        let disk = try SmallDisk(kilobytes: 256)
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let outbox = try testClient(server, .curl).outbox(directory: disk.url.appendingPathComponent("outbox"))
        let first = try await outbox.send(method: .post, path: "apply", parameters: ["n": 1])
        let filler = disk.url.appendingPathComponent("filler")
        #expect(FileManager.default.createFile(atPath: filler.path, contents: Data(count: 200 << 10)))
        #expect {
            try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["pad": String(repeating: "x", count: 100 << 10)])
        } throws: {
            error in
            guard case .outboxFailed(.writeFailed(_, let underlying))? = error as? ConveyorError else { return false }
            return (underlying as? POSIXError)?.code == .ENOSPC
        }
        #expect(outbox.pendingCount == 1)
        let names = FileManager.default.enumerator(atPath: disk.url.appendingPathComponent("outbox/items").path)?.allObjects as? [String]
        #expect(names?.count == 1, "\(names ?? [])")  // the first item's record (its body inside), nothing else
        let result = try #require(await ResultLog(outbox).first(1).first)
        #expect(result.id == first && inbox.effects.count == 1)
    }

    @Test("A garbled record, an inline body cut short and a body file cut short are moved aside and reported; the rest go on")
    func corruptFiles() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let big = String(repeating: "y", count: 100 << 10)  // past the 64 KiB kept inside a record
        var ids: [UUID] = []
        do {
            let outbox = try testClient(server, .curl).outbox(directory: directory.url)
            ids.append(try await outbox.send(method: .post, path: "apply", parameters: ["n": 0]))
            ids.append(try await outbox.send(method: .post, path: "apply", parameters: ["n": 1]))
            ids.append(try await outbox.send(method: .post, path: "apply", parameters: ["pad": big]))
            ids.append(try await outbox.send(method: .post, path: "apply", parameters: ["n": 3]))
            outbox.close()
        }
        let items = directory.url.appendingPathComponent("items")
        let records = directory.names(in: "items").filter { $0.hasSuffix(".item") }
        let bodies = directory.names(in: "items").filter { $0.hasSuffix(".body") }
        #expect(records.count == 4 && bodies.count == 1)
        try Data(#"{"version":1,"id":"#.utf8).write(to: items.appendingPathComponent(records[0]))
        let second = try Data(contentsOf: items.appendingPathComponent(records[1]))
        try second.dropLast(2).write(to: items.appendingPathComponent(records[1]))
        let handle = try FileHandle(forWritingTo: items.appendingPathComponent(bodies[0]))
        try handle.truncate(atOffset: 1000)
        try handle.close()
        try Data("stray".utf8).write(to: items.appendingPathComponent("notes.txt"))
        let outbox = try testClient(server, .curl).outbox(directory: directory.url)
        let results = await ResultLog(outbox).first(4)
        #expect(results.map(\.id) == ids)
        for (index, result) in results.prefix(3).enumerated() {
            guard case .failed(.outboxFailed(.corruptItem(let movedTo, _))) = result.outcome else {
                Issue.record("\(index): \(result.outcome)")
                continue
            }
            #expect(result.item == nil && FileManager.default.fileExists(atPath: movedTo.path))
        }
        guard case .succeeded = results[3].outcome else { return #expect(Bool(false), "\(results[3].outcome)") }
        #expect(inbox.order == [ids[3].idempotencyKey])
        outbox.settle()
        #expect(directory.names(in: "items").isEmpty && outbox.pendingCount == 0 && outbox.pendingBytes == 0)
        #expect(directory.names(in: "corrupt").contains("notes.txt") && directory.names(in: "corrupt").count == 5)
    }

    @Test("3,000 pending items are found again on opening: every name read in place (CI runs this under AddressSanitizer)")
    func manyPendingItems() throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let client = testClient(server, .curl)
        let first = try client.outbox(directory: directory.url)
        // No consumer registered: nothing is delivered, everything stays pending.
        for index in 0..<3000 { try first.sendSynchronously(method: .post, path: "apply", parameters: ["n": index]) }
        first.close()
        // Some 70 bytes per directory entry: readdir's 32 kB buffer fills several times, and each
        // time its last entry ends near the buffer's end (where a 256-byte copy of the name overran).
        let second = try client.outbox(directory: directory.url)
        #expect(second.pendingCount == 3000)
        second.close()
    }

    @Test("Two outboxes on one directory: the second is refused until the first is closed")
    func oneOwner() throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let client = testClient(server, .curl)
        let first = try client.outbox(directory: directory.url)
        try first.sendSynchronously(method: .post, path: "apply")
        #expect { try client.outbox(directory: directory.url) } throws: { error in
            guard case .outboxFailed(.directoryInUse)? = error as? ConveyorError else { return false }
            return true
        }
        first.close()
        first.settle()
        #expect { try first.sendSynchronously(method: .post, path: "apply") } throws: { error in
            guard case .outboxFailed(.closed)? = error as? ConveyorError else { return false }
            return true
        }
        let second = try client.outbox(directory: directory.url)
        #expect(second.pendingCount == 1)
    }

    @Test("send from 8 threads at once: every item accepted once, delivered once", arguments: HTTPClient.TransportKind.testedKinds)
    func concurrentSends(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, transport).outbox(
            directory: directory.url, configuration: Self.quick { $0.maximumConcurrentDeliveries = 4 })
        let log = ResultLog(outbox)
        let accepted = Lock<[UUID]>([])
        // 200 synced writes block their threads: off the cooperative pool, which other suites share.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                DispatchQueue.concurrentPerform(iterations: 8) { thread in
                    for index in 0..<25 {
                        if let id = try? outbox.sendSynchronously(method: .post, path: "apply", parameters: ["thread": thread, "n": index])
                        {
                            accepted.withLock { $0.append(id) }
                        }
                    }
                }
                done.resume()
            }
        }
        let ids = accepted.withLock { $0 }
        #expect(ids.count == 200 && Set(ids).count == 200)
        let results = await log.first(200)
        #expect(Set(results.map(\.id)) == Set(ids))
        // Each key reached the server once: no item was sent twice (no retry happened, and the
        // docs allow a redelivery only after a process died).
        let requests = inbox.requests
        #expect(requests.count == 200 && requests.values.allSatisfy { $0 == 1 }, "\(requests.filter { $0.value != 1 })")
        #expect(Set(requests.keys) == Set(ids.map(\.idempotencyKey)))
        outbox.settle()
        #expect(directory.names(in: "items").isEmpty && outbox.pendingCount == 0)
    }
}

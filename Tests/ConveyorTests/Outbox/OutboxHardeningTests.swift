import ConveyorLocking
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Outbox: hostile directories, races with close, file modes and exact counts", .timeLimit(.notAHang))
struct OutboxHardeningTests {
    /// Creates an empty file whose name is `bytes` (which need not be UTF-8) in `directory`.
    static func createFile(rawName bytes: [UInt8], in directory: URL) {
        let path = Array(directory.path.utf8) + [UInt8(ascii: "/")] + bytes + [0]
        let fd = path.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT, 0o600) } }
        #expect(fd >= 0)
        close(fd)
    }

    /// The permission bits of the file at `url` (not followed).
    static func mode(_ url: URL) -> mode_t {
        var info = stat()
        return lstat(url.path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    /// Writes one item to a fresh outbox in `directory` and closes it; returns its file names.
    static func writeItems(_ count: Int, _ server: LocalHTTPServer, in directory: URL) throws -> [UUID] {
        let outbox = try testClient(server, .curl).outbox(directory: directory)
        defer { outbox.close() }
        return try (0..<count).map { try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["n": $0]) }
    }

    @Test(
        "Names at the top of the sequence range, in upper case or not UTF-8, and a body without its record: open never traps, strangers go to corrupt/ once"
    )
    func hostileNames() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let ids = try Self.writeItems(2, server, in: directory.url)
        let items = directory.url.appendingPathComponent("items")
        let dead = directory.url.appendingPathComponent("dead")
        // The second item's record under an upper-case name: it parses, but is not a name the outbox writes.
        let second = try #require(directory.names(in: "items").first { $0.contains(ids[1].uuidString.lowercased()) })
        try FileManager.default.moveItem(
            at: items.appendingPathComponent(second), to: items.appendingPathComponent(second.prefix(17) + ids[1].uuidString + ".item"))
        // Garbage under names whose sequence leaves no next one (the last traps `+ 1` on open, the
        // one before it on the next send).
        try Data("garbage".utf8).write(to: items.appendingPathComponent("ffffffffffffffff-\(UUID().uuidString.lowercased()).item"))
        try Data("garbage".utf8).write(to: items.appendingPathComponent("fffffffffffffffe-\(UUID().uuidString.lowercased()).item"))
        try Data("garbage".utf8).write(to: dead.appendingPathComponent("ffffffffffffffff-\(UUID().uuidString.lowercased()).item"))
        Self.createFile(rawName: Array("0000000000000003-not-utf8-".utf8) + [0xFF, 0xFE] + Array(".item".utf8), in: items)
        // A dead letter's body whose record is gone (a removal stopped halfway).
        try Data(count: 100).write(to: dead.appendingPathComponent("0000000000000009-\(UUID().uuidString.lowercased()).body"))

        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: OutboxTests.quick())
        #expect(outbox.pendingCount == 1)
        let log = ResultLog(outbox)
        let first = try #require(await log.first(1).first)
        #expect(first.id == ids[0] && inbox.order == [ids[0].idempotencyKey])
        // A send still has a next number.
        let third = try await outbox.send(method: .post, path: "apply", parameters: ["n": 3])
        #expect(await log.first(2).last?.id == third)
        outbox.settle()
        #expect(log.results.count == 2, "\(log.results.map(\.outcome))")
        #expect(directory.names(in: "items").isEmpty && directory.names(in: "dead").isEmpty)
        let corrupt = directory.names(in: "corrupt")
        #expect(corrupt.count == 5 && corrupt.contains { $0.hasPrefix("not-utf8-") }, "\(corrupt)")
        outbox.close()

        // Once set aside, a stranger is not reported again by the next owner.
        let again = try testClient(server, .curl).outbox(directory: directory.url, configuration: OutboxTests.quick())
        let againLog = ResultLog(again)
        let fourth = try await again.send(method: .post, path: "apply", parameters: ["n": 4])
        #expect(await againLog.first(1).first?.id == fourth)
        again.settle()
        #expect(againLog.results.count == 1 && directory.names(in: "corrupt").count == 5)
    }

    @Test("Symbolic links where item files should be are not followed: moved to corrupt/ as links and reported, nothing sent")
    func symbolicLinks() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let outside = try TemporaryDirectory()
        let ids = try Self.writeItems(2, server, in: outside.url)
        let records = outside.names(in: "items")
        let directory = try TemporaryDirectory()
        _ = try Self.writeItems(0, server, in: directory.url)
        let link = directory.url.appendingPathComponent("items").appendingPathComponent(records[0])
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: outside.url.appendingPathComponent("items/\(records[0])"))
        let deadLink = directory.url.appendingPathComponent("dead").appendingPathComponent(records[1])
        try FileManager.default.createSymbolicLink(
            at: deadLink, withDestinationURL: outside.url.appendingPathComponent("items/\(records[1])"))
        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: OutboxTests.quick())
        // Listing the dead letters does not read through the link: it is set aside and reported.
        #expect(try outbox.deadLetters().isEmpty)
        let results = await ResultLog(outbox).first(2)
        #expect(Set(results.map(\.id)) == Set(ids))
        for result in results {
            guard case .failed(.outboxFailed(.corruptItem(let movedTo, _))) = result.outcome else {
                Issue.record("\(result.outcome)")
                continue
            }
            #expect(DurableFiles.isSymbolicLink(movedTo), "\(movedTo.path)")
        }
        outbox.settle()
        #expect(server.receivedRequests.isEmpty)
        #expect(directory.names(in: "items").isEmpty && directory.names(in: "dead").isEmpty && outbox.pendingCount == 0)
        // The records outside are untouched.
        #expect(outside.names(in: "items") == records)
    }

    @Test("deadLetters() reports a letter it cannot read instead of leaving it out silently")
    func unreadableDeadLetter() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let client = testClient(server, .curl)
        let ids = try OutboxCrashTests.makeDeadLetters(2, client: client, in: directory)
        let dead = directory.url.appendingPathComponent("dead")
        let garbled = try #require(
            directory.names(in: "dead").first { $0.contains(ids[0].uuidString.lowercased()) && $0.hasSuffix(".item") })
        try Data(#"{"version":1"#.utf8).write(to: dead.appendingPathComponent(garbled))
        // Its report was handed over by the last process: only `deadLetters()` reads it now.
        #expect(FileManager.default.createFile(atPath: dead.appendingPathComponent(garbled.dropLast(5) + ".reported").path, contents: nil))
        let outbox = try client.outbox(directory: directory.url, configuration: OutboxTests.quick())
        #expect(try outbox.deadLetters().map(\.id) == [ids[1]])
        let log = ResultLog(outbox)
        let results = await log.first(2)
        guard case .failed(.outboxFailed(.corruptItem)) = results[0].outcome, results[0].id == ids[0] else {
            Issue.record("\(results.map(\.outcome))")
            return
        }
        #expect(results[1].id == ids[1] && results[1].isRedelivery)  // the other letter's unfinished report
        #expect(directory.names(in: "corrupt").count == 2)  // its record and its body
    }

    @Test("Two items with one sequence number (a directory written by two owners), two deliveries at once: both delivered and removed")
    func itemsKeyedByID() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let other = try TemporaryDirectory()
        let ids = try Self.writeItems(1, server, in: directory.url) + Self.writeItems(1, server, in: other.url)
        let record = try #require(other.names(in: "items").first)
        try FileManager.default.moveItem(
            at: other.url.appendingPathComponent("items/\(record)"), to: directory.url.appendingPathComponent("items/\(record)"))
        #expect(Set(directory.names(in: "items").map { $0.prefix(16) }).count == 1)
        let outbox = try testClient(server, .curl).outbox(
            directory: directory.url, configuration: OutboxTests.quick { $0.maximumConcurrentDeliveries = 2 })
        let results = await ResultLog(outbox).first(2)
        #expect(Set(results.map(\.id)) == Set(ids) && inbox.effects.count == 2)
        outbox.settle()
        #expect(outbox.pendingCount == 0 && outbox.pendingBytes == 0)
        #expect(directory.names(in: "items").isEmpty, "\(directory.names(in: "items"))")
    }

    @Test(
        "close() racing sends from four threads, 20 times: every id a send returned is on disk when close() returns, or delivered; the next owner delivers them all, none corrupt",
        arguments: HTTPClient.TransportKind.testedKinds)
    func closeRacingSends(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        for trial in 0..<20 {
            let directory = try TemporaryDirectory()
            let client = testClient(server, transport)
            let configuration = OutboxTests.quick { $0.maximumConcurrentDeliveries = 2 }
            let outbox = try client.outbox(directory: directory.url, configuration: configuration)
            let firstLog = ResultLog(outbox)  // deliveries and acknowledgements run while close() comes
            let accepted = Lock<[UUID]>([])
            let unexpected = Lock<[String]>([])
            let onDisk = Lock<Set<String>>([])
            // Sends block their threads on fsync: off the cooperative pool.
            try await offPool {
                DispatchQueue.concurrentPerform(iterations: 5) { thread in
                    if thread == 0 {
                        for index in 0..<5 {
                            _ = try? outbox.sendSynchronously(method: .post, path: "apply", parameters: ["closer": index])
                        }
                        outbox.close()
                        // What the next owner will find: taken the moment close() returned.
                        onDisk.withLock { $0 = Set(directory.names(in: "items")) }
                        return
                    }
                    for index in 0..<1000 {
                        do {
                            let id = try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["thread": thread, "n": index])
                            accepted.withLock { $0.append(id) }
                        } catch ConveyorError.outboxFailed(.closed) {
                            return
                        } catch {
                            unexpected.withLock { $0.append("\(error)") }
                            return
                        }
                    }
                }
            }
            #expect(unexpected.withLock { $0 }.isEmpty, "trial \(trial): \(unexpected.withLock { $0 })")
            let names = onDisk.withLock { $0 }
            let delivered = Set(firstLog.results.map(\.id))
            let ids = accepted.withLock { $0 }
            let late = ids.filter { id in !delivered.contains(id) && !names.contains { $0.contains(id.uuidString.lowercased()) } }
            #expect(
                late.isEmpty,
                "trial \(trial): \(late.count) of \(ids.count) sends returned an id that was not on disk when close() returned")
            let sequences = names.filter { $0.hasSuffix(".item") || $0.hasSuffix(".reported") }.map { $0.prefix(16) }
            #expect(Set(sequences).count == sequences.count, "trial \(trial): a sequence number twice")
            // The next owner delivers what is left, none of it corrupt.
            let next = try client.outbox(directory: directory.url, configuration: configuration)
            let left = next.pendingCount
            let results = await ResultLog(next).first(left)
            for result in results {
                guard case .succeeded = result.outcome else {
                    Issue.record("trial \(trial): \(result.outcome)")
                    continue
                }
            }
            #expect(Set(ids).isSubset(of: delivered.union(results.map(\.id))), "trial \(trial)")
            next.settle()
            #expect(next.pendingCount == 0 && directory.names(in: "items").isEmpty && directory.names(in: "corrupt").isEmpty)
            next.close()
        }
        #expect(inbox.effects.values.allSatisfy { $0 == 1 })
    }

    @Test(
        "A 401 is final like any 4xx, with a Basic challenge, a Bearer challenge or none: one request each, no dead letter",
        arguments: HTTPClient.TransportKind.testedKinds)
    func unauthorizedIsFinal(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/basic") { _ in .init(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"outbox\""]) }
        server.route("/bearer") { _ in .init(status: 401, headers: ["WWW-Authenticate": "Bearer realm=\"outbox\""]) }
        server.route("/bare") { _ in .init(status: 401) }
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, transport).outbox(
            directory: directory.url, configuration: OutboxTests.quick { $0.maximumAttempts = 3 })
        let ids = try ["basic", "bearer", "bare"].map { try outbox.sendSynchronously(method: .post, path: $0, parameters: ["n": 1]) }
        let results = await ResultLog(outbox).first(3)
        #expect(results.map(\.id) == ids)
        for result in results {
            guard case .failed = result.outcome else {
                Issue.record("\(result.outcome)")
                continue
            }
        }
        #expect(["/basic", "/bearer", "/bare"].map { server.requestCount(path: $0) } == [1, 1, 1])
        outbox.settle()
        #expect(try outbox.deadLetters().isEmpty)
    }

    @Test(
        "items/ made read-only during delivery: no result is handed over while its record cannot be marked; the failures are reported; once writable, each comes once, unflagged"
    )
    func readOnlyDirectory() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(
            directory: directory.url, configuration: OutboxTests.quick { $0.maximumConcurrentDeliveries = 3 })
        let ids = try (0..<3).map { try outbox.sendSynchronously(method: .post, path: "apply", parameters: ["n": $0]) }
        let readOnly = try ReadOnlyMount(directory.url.appendingPathComponent("items"))
        // Counted once per file: each item's rename is tried again after a backoff.
        let failures = EventCount()
        let failed = Lock<Set<URL>>([])
        let observer = NotificationCenter.default.addObserver(forName: .conveyorOutboxFileOperationFailed, object: outbox, queue: nil) {
            note in
            if case .outboxFailed(.writeFailed(let url, let error))? = note.userInfo?["error"] as? ConveyorError,
                (error as? POSIXError)?.code == .EROFS, failed.withLock({ $0.insert(url).inserted })
            {
                failures.increment()
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let log = ResultLog(outbox)
        // Every item was answered; none of the three renames to `.reported` could happen.
        await failures.wait(atLeast: 3)
        #expect(inbox.effects.count == 3)
        #expect(log.results.isEmpty && outbox.pendingCount == 3)
        try readOnly.release()
        let results = await log.first(3)
        #expect(Set(results.map(\.id)) == Set(ids) && results.allSatisfy { !$0.isRedelivery })
        outbox.settle()
        #expect(log.results.count == 3 && outbox.pendingCount == 0 && directory.names(in: "items").isEmpty)
        // The outcome was kept while the rename was tried again: each item was sent once.
        #expect(server.requestCount(path: "/apply") == 3)
    }

    @Test(
        "Every file is 0600 and every directory 0700 under umask 0 — a multipart body over 64 KiB, a dead letter's, directories an older version made 0755"
    )
    func fileModes() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/fail") { _ in .init(status: 500) }
        let directory = try TemporaryDirectory()
        for name in ["items", "dead"] {
            try FileManager.default.createDirectory(
                at: directory.url.appendingPathComponent(name), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        }
        // The widest umask: the modes must not come from it (process-wide, restored at the end;
        // other suites' files are merely created more open meanwhile).
        let previousMask = umask(0)
        defer { umask(previousMask) }
        let outbox = try testClient(server, .curl).outbox(
            directory: directory.url, configuration: OutboxTests.quick { $0.maximumAttempts = 1 })
        let big = Data(repeating: 0x61, count: 100 << 10)
        try await outbox.send(path: "fail") { $0.append(data: big, name: "file", fileName: "a.bin", mimeType: "application/octet-stream") }
        try await outbox.send(method: .post, path: "fail", parameters: ["n": 1])
        let items = directory.url.appendingPathComponent("items")
        let files = directory.names(in: "items")
        #expect(files.count == 3 && files.filter { $0.hasSuffix(".body") }.count == 1, "\(files)")
        for file in files {
            #expect(
                Self.mode(items.appendingPathComponent(file)) == 0o600,
                "\(file): \(String(Self.mode(items.appendingPathComponent(file)), radix: 8))")
        }
        for name in ["", "items", "dead", "corrupt"] {
            let url = directory.url.appendingPathComponent(name)
            #expect(Self.mode(url) == 0o700, "\(name): \(String(Self.mode(url), radix: 8))")
        }
        #expect(Self.mode(directory.url.appendingPathComponent("lock")) == 0o600)
        _ = await ResultLog(outbox).first(2)
        outbox.settle()
        let dead = directory.url.appendingPathComponent("dead")
        #expect(directory.names(in: "dead").count == 5)  // two records, one body, two markers
        for file in directory.names(in: "dead") { #expect(Self.mode(dead.appendingPathComponent(file)) == 0o600, "\(file)") }
    }

    @Test("pendingCount is exact once a result is handed over: in a results loop and right after it ends")
    func pendingCountIsExact() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        _ = IdempotentInbox(server)
        let directory = try TemporaryDirectory()
        let outbox = try testClient(server, .curl).outbox(directory: directory.url, configuration: OutboxTests.quick())
        for index in 0..<3 {
            try await outbox.send(method: .post, path: "apply", parameters: ["pad": String(repeating: "p", count: 100_000), "n": index])
        }
        var seen = 0
        for await _ in outbox.results {
            // This one and those after it: the ones before were handed over when the loop asked for this one.
            #expect(outbox.pendingCount == 3 - seen, "in the loop, result \(seen)")
            seen += 1
            if seen == 3 { break }
        }
        #expect(outbox.pendingCount == 0 && outbox.pendingBytes == 0)
        outbox.close()
    }

    @Test(
        "The async sends do their work off the cooperative pool and accept all four kinds of body",
        arguments: HTTPClient.TransportKind.testedKinds)
    func asyncSends(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/upload") { request in .text("\(request.bodyLength)", status: 201) }
        let directory = try TemporaryDirectory()
        let source = directory.url.appendingPathComponent("reading.bin")
        try Data(repeating: 7, count: 300_000).write(to: source)
        let link = directory.url.appendingPathComponent("link.bin")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: source)
        let outbox = try testClient(server, transport).outbox(directory: directory.url.appendingPathComponent("box"))
        // Sixteen at once from Tasks: with the fsyncs on the pool's two threads these would queue behind each other.
        let ids = try await withThrowingTaskGroup(of: UUID.self) { group in
            for index in 0..<4 {
                group.addTask { try await outbox.send(method: .post, path: "upload", parameters: ["n": index]) }
                group.addTask { try await outbox.send(method: .post, path: "upload", body: ["n": index], requestSerializer: .json) }
                group.addTask { try await outbox.send(path: "upload") { $0.append("\(index)", name: "n") } }
                // The caller's file may be a symbolic link (only the outbox's own files are never followed).
                group.addTask { try await outbox.send(method: .put, path: "upload", fileURL: index == 0 ? link : source) }
            }
            return try await group.reduce(into: [UUID]()) { $0.append($1) }
        }
        #expect(Set(ids).count == 16 && outbox.pendingCount == 16)
        let results = await ResultLog(outbox).first(16)
        #expect(Set(results.map(\.id)) == Set(ids))
        #expect(results.allSatisfy { if case .succeeded = $0.outcome { true } else { false } })
        outbox.close()
        await #expect(throws: ConveyorError.self) { try await outbox.send(method: .post, path: "upload") }
    }

    @Test(
        "A retry stopped between its writes (record in line, body still in dead/; or body moved, record still in dead/) is finished by the next start"
    )
    func retryFinishedByRecovery() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/upload") { request in .text("\(request.bodyLength)", status: 201) }
        let client = testClient(server, .curl)
        for bodyMoved in [false, true] {
            let directory = try TemporaryDirectory()
            let id = try #require(try OutboxCrashTests.makeDeadLetters(1, client: client, in: directory).first)
            let dead = directory.url.appendingPathComponent("dead")
            let stem = try #require(directory.names(in: "dead").first { $0.hasSuffix(".item") }?.dropLast(5))
            let newStem = "0000000000000005" + stem.dropFirst(16)
            let items = directory.url.appendingPathComponent("items")
            try FileManager.default.copyItem(
                at: dead.appendingPathComponent(stem + ".item"), to: items.appendingPathComponent(newStem + ".item"))
            if bodyMoved {
                try FileManager.default.moveItem(
                    at: dead.appendingPathComponent(stem + ".body"), to: items.appendingPathComponent(newStem + ".body"))
            }
            let outbox = try client.outbox(directory: directory.url, configuration: OutboxTests.quick())
            #expect(outbox.pendingCount == 1 && directory.names(in: "dead").isEmpty, "\(directory.names(in: "dead"))")
            let result = try #require(await ResultLog(outbox).first(1).first)
            guard case .succeeded(let response) = result.outcome else {
                Issue.record("body moved \(bodyMoved): \(result.outcome)")
                continue
            }
            #expect(result.id == id && String(decoding: response.data, as: UTF8.self) == "\(result.item?.bodyLength ?? -1)")
            outbox.close()
        }
    }
}

/// A directory made read-only by a read-only bind mount over it (root only, as ``SmallDisk``):
/// chmod would not stop root, and a whole file system cannot be remounted read-only while the
/// outbox holds its lock file open for writing.
final class ReadOnlyMount: Sendable {
    let url: URL
    private let mounted = Lock(true)

    init(_ url: URL) throws {
        self.url = url
        try Self.run(["--bind", url.path, url.path])
        do {
            try Self.run(["-o", "remount,bind,ro", url.path])
        } catch {
            try? Self.unmount(url)
            throw error
        }
    }

    /// Makes the directory writable again.
    func release() throws {
        let wasMounted = mounted.withLock { state -> Bool in
            defer { state = false }
            return state
        }
        guard wasMounted else { return }
        try Self.unmount(url)
    }

    deinit { try? release() }

    private static func unmount(_ url: URL) throws {
        let process = try ChildProcess("/bin/umount", [url.path])
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SmallDisk.MountError(description: "umount \(url.path) failed") }
    }

    private static func run(_ arguments: [String]) throws {
        let process = try ChildProcess("/bin/mount", arguments)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SmallDisk.MountError(description: "mount \(arguments.joined(separator: " ")) failed (root needed)")
        }
    }
}

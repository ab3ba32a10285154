import Conveyor
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The durable outbox: how fast `send` accepts items (bounded by `fsync`, so compared with a
/// plain write + `fsync` loop in the same run), how fast it delivers them against the client
/// sending the same POSTs directly, and the memory 100,000 pending items cost (child processes).
enum OutboxBench {
    struct Result: Codable {
        let items: Int
        let acceptedPerSecond: Double
        let plainWriteFsyncPerSecond: Double
        /// A bare loop of what a durable accept by rename needs at least — write a temporary file,
        /// `fsync` it, rename it into place — in a folder inside the outbox's directory, in rounds
        /// interleaved with the accepting `send`s (the disk's rate drifts from minute to minute).
        let plainWriteFsyncRenamePerSecond: Double
        /// The same loop with the directory `fsync`ed after each rename: the two syncs a durable
        /// rename needs (POSIX makes a rename durable only when its directory is synced), which
        /// `send` did until it wrote records in place.
        let plainWriteFsyncRenameSyncDirectoryPerSecond: Double
        let directSequentialSeconds: Double
        let outboxInOrderSeconds: Double
        let directEightInFlightSeconds: Double
        let outboxEightConcurrentSeconds: Double
        let pendingItems: Int
        let pendingWriteSeconds: Double
        let writerPeakRSSMegabytes: Double
        let openedWithPendingRSSMegabytes: Double
        let openedEmptyRSSMegabytes: Double
    }

    static let body = Data(
        #"{"comment":"On the train","author":"conveyor","tags":["a","b","c"],"pad":"\#(String(repeating: "x", count: 120))"}"#.utf8)

    static func measure(items: Int, pending: Int) async throws -> Result {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.maximumStoredBodySize = 0
        server.route("/inbox") { _ in .init(status: 201) }
        var configuration = HTTPClient.Configuration.default
        configuration.monitorsReachability = false
        configuration.cache = nil
        let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-outbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }

        // Accepting: items on disk, synced; against one file written and synced per item.
        let plainStart = Date()
        for index in 0..<items {
            let fd = open(scratch.appendingPathComponent("plain-\(index)").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = body.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            fsync(fd)
            close(fd)
        }
        let plainSeconds = Date().timeIntervalSince(plainStart)
        var request = try client.request(method: .post, path: "inbox")
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let frozen = request

        // Delivery in order, against the same POSTs awaited one by one.
        let directStart = Date()
        for _ in 0..<items { _ = try await client.response(for: frozen, responseSerializer: DataResponseSerializer()) }
        let directSeconds = Date().timeIntervalSince(directStart)
        let accepting = try acceptInterleaved(items: items, client: client, directory: scratch.appendingPathComponent("in-order"))
        let inOrderSeconds = await deliverAccepted(items, from: accepting.outbox)

        // Eight at a time, against eight direct POSTs in flight.
        let directConcurrentStart = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for _ in stride(from: lane, to: items, by: 8) {
                        _ = try await client.response(for: frozen, responseSerializer: DataResponseSerializer())
                    }
                }
            }
            try await group.waitForAll()
        }
        let directConcurrentSeconds = Date().timeIntervalSince(directConcurrentStart)
        let concurrentSeconds = try await deliver(
            items: items, client: client, directory: scratch.appendingPathComponent("concurrent"), concurrent: 8)

        // Memory: a child writes `pending` items (no consumer), another opens the outbox holding
        // them, a third opens an empty one.
        let pendingDirectory = scratch.appendingPathComponent("pending").path
        let writeStart = Date()
        let writerPeak = Double(try ChildProcess.run(["--child-outbox-write", pendingDirectory, String(pending)])) ?? -1
        let writeSeconds = Date().timeIntervalSince(writeStart)
        let opened = Double(try ChildProcess.run(["--child-outbox-open", pendingDirectory])) ?? -1
        let empty = Double(try ChildProcess.run(["--child-outbox-open", scratch.appendingPathComponent("empty").path])) ?? -1
        return Result(
            items: items, acceptedPerSecond: Double(items) / accepting.acceptSeconds,
            plainWriteFsyncPerSecond: Double(items) / plainSeconds,
            plainWriteFsyncRenamePerSecond: Double(items) / accepting.renameSeconds,
            plainWriteFsyncRenameSyncDirectoryPerSecond: Double(items) / accepting.syncedSeconds,
            directSequentialSeconds: directSeconds, outboxInOrderSeconds: inOrderSeconds,
            directEightInFlightSeconds: directConcurrentSeconds, outboxEightConcurrentSeconds: concurrentSeconds,
            pendingItems: pending, pendingWriteSeconds: writeSeconds, writerPeakRSSMegabytes: writerPeak,
            openedWithPendingRSSMegabytes: opened, openedEmptyRSSMegabytes: empty)
    }

    /// What accepting took: `send`s into an outbox, and the two loops beside it, interleaved.
    struct Accepting {
        let outbox: Outbox
        let acceptSeconds: Double
        let renameSeconds: Double
        let syncedSeconds: Double
    }

    /// Sends `items` into a fresh outbox in `directory` (no consumer yet: nothing is delivered)
    /// in ten rounds, each followed by as many files of the bare write + `fsync` + rename loop and
    /// of the same loop syncing its directory, both in folders inside the outbox's directory: the
    /// three share the disk's state. On this journal-less ext4 creating a file costs more while
    /// many inodes in its group were freed in the last 30 s (`ext4_create` → `recently_deleted`
    /// dominated a profile taken after a folder of 3,000 files was removed), and the bare loop
    /// timed minutes apart from `send` ran at 2,069 to 4,130 files/s in session 16–17 runs.
    private static func acceptInterleaved(items: Int, client: HTTPClient, directory: URL) throws -> Accepting {
        var settings = Outbox.Configuration.default
        settings.maximumConcurrentDeliveries = 1
        let outbox = try client.outbox(directory: directory, configuration: settings)
        let rounds = 10
        var accept = 0.0
        var rename = 0.0
        var synced = 0.0
        for round in 0..<rounds {
            let count = items / rounds + (round < items % rounds ? 1 : 0)
            let start = Date()
            try sendAll(count, to: outbox)
            accept += Date().timeIntervalSince(start)
            rename += try writeFsyncRename(count, in: directory.appendingPathComponent("rename-loop"), naming: round)
            synced += try writeFsyncRename(
                count, in: directory.appendingPathComponent("synced-loop"), naming: round, syncingDirectory: true)
        }
        return Accepting(outbox: outbox, acceptSeconds: accept, renameSeconds: rename, syncedSeconds: synced)
    }

    /// Registers a handler on an outbox holding `items` and times until the last result was handed over; closes it.
    private static func deliverAccepted(_ items: Int, from outbox: Outbox) async -> Double {
        defer { outbox.close() }
        let start = Date()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let count = Counter()
            outbox.setResultHandler { _ in
                if count.increment() == items { continuation.resume() }
            }
        }
        return Date().timeIntervalSince(start)
    }

    /// Writes `items` files of ``body`` into `directory` the way a durable store must at least:
    /// each to a temporary name, `fsync`ed, renamed to its final name, and with
    /// `syncingDirectory` the directory `fsync`ed after the rename, as `send` did before it wrote
    /// in place. Names begin with `round`, so that rounds never collide.
    /// - Returns: The seconds it took.
    private static func writeFsyncRename(_ items: Int, in directory: URL, naming round: Int, syncingDirectory: Bool = false) throws
        -> Double
    {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let directoryFD = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { close(directoryFD) }
        let start = Date()
        for item in 0..<items {
            let index = "\(round)-\(item)"
            let temporary = directory.appendingPathComponent("\(index).tmp").path
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            _ = body.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            fsync(fd)
            close(fd)
            guard rename(temporary, directory.appendingPathComponent("\(index)").path) == 0 else {
                throw POSIXError(.init(rawValue: errno) ?? .EIO)
            }
            if syncingDirectory { fsync(directoryFD) }
        }
        return Date().timeIntervalSince(start)
    }

    /// Accepts `items` into a fresh outbox, then times their delivery (``deliverAccepted(_:from:)``).
    private static func deliver(items: Int, client: HTTPClient, directory: URL, concurrent: Int) async throws -> Double {
        var settings = Outbox.Configuration.default
        settings.maximumConcurrentDeliveries = concurrent
        let outbox = try client.outbox(directory: directory, configuration: settings)
        try sendAll(items, to: outbox)
        return await deliverAccepted(items, from: outbox)
    }

    /// The body as a file, for `send(…fileURL:)` (the outbox copies it per item).
    static let bodyFile: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-outbox-body-\(getpid()).json")
        try? body.write(to: url)
        return url
    }()

    /// Sends `items` with the synchronous `send`, the one the accept rate measures (from an
    /// async function, `send` would be the async form, which adds a thread hop per item).
    private static func sendAll(_ items: Int, to outbox: Outbox) throws {
        for _ in 0..<items { try outbox.sendSynchronously(method: .post, path: "inbox", fileURL: bodyFile) }
    }

    /// In the child: sends `count` items to an outbox whose server is never asked; prints the peak RSS in MB.
    static func runWriteChild(directory: String, count: Int) throws {
        let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!)
        var settings = Outbox.Configuration.default
        settings.maximumItemCount = count
        let outbox = try client.outbox(directory: URL(fileURLWithPath: directory), configuration: settings)
        for _ in 0..<count { try outbox.sendSynchronously(method: .post, path: "inbox", fileURL: bodyFile) }
        outbox.close()
        try? FileManager.default.removeItem(at: bodyFile)
        print(MultipartMemory.peakRSSMegabytes())
    }

    /// In the child: opens the outbox in `directory` (reading what is pending) and prints the RSS in MB.
    static func runOpenChild(directory: String) throws {
        let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!)
        var settings = Outbox.Configuration.default
        settings.maximumItemCount = 1_000_000
        let outbox = try client.outbox(directory: URL(fileURLWithPath: directory), configuration: settings)
        _ = outbox.pendingCount
        print(RequestMemory.residentKilobytes() / 1024)
        outbox.close()
    }

    /// A thread-safe count.
    final class Counter: Sendable {
        private let value = Mutex(0)
        func increment() -> Int {
            value.withLock {
                $0 += 1
                return $0
            }
        }
    }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Requests that survive being offline, a crash and a restart: each is written to disk before
/// `send` returns, delivered when the server can be reached, retried with backoff, and its
/// result handed over once — after a restart, if need be.
///
/// ```swift
/// let outbox = try client.outbox(directory: appSupport.appendingPathComponent("outbox"))
/// outbox.setResultHandler { result in
///     if case .succeeded = result.outcome { print("posted \(result.id)") }
/// }
/// let id = try outbox.send(method: .post, path: "comments", body: Comment(text: "On the train"))
/// ```
///
/// - `send` returns once the request and its body are written and `fsync`ed (file and
///   directory); it never waits for the network.
/// - Every attempt carries the item's `Idempotency-Key`, the same after a restart, so a server
///   that honours the key applies the request once even when the client died before reading
///   the answer.
/// - Delivery starts when a consumer is registered (``setResultHandler(_:)`` or iterating
///   ``results``): results have somewhere to go before anything is sent. An item is removed
///   from disk only after its result was handed over.
/// - The client's default headers, authenticator, logging, TLS and cache settings apply to
///   every attempt, as to any other request: credentials are never written to the outbox's
///   files unless you pass them in `headers`.
///
/// See <doc:SendingWhileOffline>.
public final class Outbox: @unchecked Sendable {
    // @unchecked Sendable: all mutable state is in `state`, behind one Lock; the other stored
    // properties are set once in init. Disk work and decisions run on `queue`.

    /// The directory the items live in (created if needed).
    public let directory: URL
    /// The settings given at creation.
    public let configuration: Configuration
    /// The client every attempt goes through.
    public let client: HTTPClient

    let itemsDirectory: URL
    let deadDirectory: URL
    let corruptDirectory: URL
    /// Disk work, attempts and decisions run here, one at a time.
    let queue: DispatchQueue
    /// Removals of finished items' files, which run beside `queue` (an unlink costs more than
    /// the rest of a delivery on some file systems); `close()` waits for them.
    let fileWork = DispatchGroup()
    /// Marks `queue`, so that `close()` knows when it is called from it.
    static let queueKey = DispatchSpecificKey<Bool>()
    let channel: OutboxResultChannel

    /// One item on its way: taken from the line, loaded, in an attempt or waiting for the next.
    struct Delivery {
        /// The record and its inline body, once read.
        var stored: OutboxStoredItem?
        /// What its files take on disk (record and body file), counted off ``pendingBytes`` when it goes.
        var bytes: Int64 = 0
        /// Failures to connect in a row: backoff grows with them, but they are not attempts.
        var connectFailures = 0
        /// Bumped by every new schedule and attempt: a timer whose generation is stale does nothing.
        var retryGeneration = 0
        /// A retry timer is armed (the network's return brings it forward).
        var waitsForRetry = false
        /// Parked because reachability said the host is unreachable.
        var waitsForNetwork = false
        var operation: HTTPRequestOperation?
    }

    struct State {
        /// Waiting items in order; those before `head` are taken.
        var pending: [OutboxItemName] = []
        var head = 0
        var inFlight: [UInt64: Delivery] = [:]
        var count = 0
        var bytes: Int64 = 0
        var nextSequence: UInt64 = 1
        var started = false
        var closed = false
        var offline = false
        /// Items whose result had been handed over (maybe) before the last stop.
        var redelivered: Set<UUID> = []
        /// Dead letters whose result was never handed over.
        var unreportedDead: [OutboxItemName] = []
        var reachabilityToken: UUID?
        var directoryLock: DirectoryLock?
    }
    let state = Lock(State())

    /// Opens (or creates) the outbox in `directory` for `client`. Prefer ``HTTPClient/outbox(directory:configuration:)``.
    /// - Parameters:
    ///   - directory: Its own directory; one outbox at a time may use it.
    ///   - client: The client that sends the items.
    ///   - configuration: Delivery, retry and limits; default ``Configuration/default``.
    /// - Throws: ``ConveyorError/outboxFailed(reason:)``: ``ConveyorError/OutboxFailureReason/directoryInUse(_:)``
    ///   when another outbox holds it, ``ConveyorError/OutboxFailureReason/writeFailed(_:_:)``
    ///   when it cannot be created or read.
    public init(directory: URL, client: HTTPClient, configuration: Configuration = .default) throws {
        self.directory = directory
        self.client = client
        self.configuration = configuration
        itemsDirectory = directory.appendingPathComponent("items", isDirectory: true)
        deadDirectory = directory.appendingPathComponent("dead", isDirectory: true)
        corruptDirectory = directory.appendingPathComponent("corrupt", isDirectory: true)
        channel = OutboxResultChannel(callbackQueue: client.configuration.callbackQueue)
        queue = DispatchQueue(label: "org.conveyor.outbox")
        queue.setSpecific(key: Self.queueKey, value: true)
        let lock = try openDirectory()
        state.withLock { $0.directoryLock = lock }
        do {
            try recover()
        } catch {
            close()
            throw error
        }
        channel.onConsumer = { [weak self] in self?.start() }
        watchReachability()
    }

    deinit { close() }

    /// Items waiting for delivery or for their result to be handed over (dead letters not included).
    public var pendingCount: Int { state.withLock { $0.count } }

    /// What the waiting items take on disk, records and bodies.
    public var pendingBytes: Int64 { state.withLock { $0.bytes } }

    /// Sets the block each result is handed to — one at a time, in order, on the client's
    /// callback queue (``HTTPClient/Configuration/callbackQueue``, the main queue on Apple
    /// platforms) — and starts delivery. An item is removed from disk when the block returns; if the process stops
    /// while it runs, the result is handed over again after a restart, marked
    /// ``ItemResult/isRedelivery``. Register it at start-up, before or after `send`.
    /// - Parameter handler: The block; nil stops handing results over (delivery pauses once
    ///   results wait).
    public func setResultHandler(_ handler: (@Sendable (ItemResult) -> Void)?) {
        channel.setHandler(handler)
    }

    /// Results as an `AsyncSequence`, the alternative to ``setResultHandler(_:)``; iterating it
    /// starts delivery. A result counts as handed over when the loop asks for the next one,
    /// leaves, or the outbox is closed: if the process stops inside the loop body, it comes again after a restart,
    /// marked ``ItemResult/isRedelivery``. One consumer at a time: a second iterator ends at
    /// once, and a result handler, when set, takes precedence.
    public var results: Results { Results(channel: channel) }

    /// Stops delivery and releases the directory before it returns: attempts in flight are
    /// cancelled (their items stay and are sent again, with the same key, by the next outbox on
    /// the directory), the result a ``results`` loop holds counts as handed over, the loop ends,
    /// and `send` throws ``ConveyorError/OutboxFailureReason/closed``. A result handler still
    /// running leaves its item to the next outbox, which hands the result over again, flagged
    /// ``ItemResult/isRedelivery``. Called when the outbox is released.
    public func close() {
        // First: the result a loop holds counts as handed over (its files' removal is queued
        // now, while the outbox is still open); a handler returning after this point leaves its
        // item for the next owner, who hands the result over again, flagged.
        channel.close()
        let (deliveries, token, lock) = state.withLock { state -> ([Delivery], UUID?, DirectoryLock?) in
            defer {
                state.closed = true
                state.inFlight.removeAll()
                state.reachabilityToken = nil
                state.directoryLock = nil
            }
            return (Array(state.inFlight.values), state.reachabilityToken, state.directoryLock)
        }
        // Timers find their item gone and do nothing.
        for delivery in deliveries { delivery.operation?.cancel() }
        if let token { client.reachability?.removeHandler(token) }
        // The directory is released only once no block of this outbox touches its files: the
        // running one (if any) is waited for, and later ones see `closed` and do nothing. On the
        // queue itself (a release from one of its blocks) nothing else can be running.
        fileWork.wait()
        if DispatchQueue.getSpecific(key: Self.queueKey) == nil { queue.sync {} }
        lock?.release()
    }

    /// Waits until results already handed to a handler are acknowledged and their files gone.
    func settle() {
        channel.flush()
        fileWork.wait()
        queue.sync {}
    }

    /// Items parked until reachability says the host is back.
    var waitingForNetworkCount: Int { state.withLock { $0.inFlight.values.filter(\.waitsForNetwork).count } }

    /// The items that ran out of attempts or time, oldest first, read from disk.
    /// - Returns: The dead letters.
    /// - Throws: ``ConveyorError/outboxFailed(reason:)`` when the directory cannot be read.
    public func deadLetters() throws -> [Item] {
        var names: [OutboxItemName] = []
        do {
            try DurableFiles.forEachName(in: deadDirectory) { fileName in
                if let (name, kind) = OutboxItemName.parse(fileName), kind == .item { names.append(name) }
            }
        } catch {
            throw ConveyorError.outboxFailed(reason: .writeFailed(error.url, error.error))
        }
        return names.sorted().compactMap { name in
            guard let data = try? Data(contentsOf: name.url(.item, in: deadDirectory)),
                let stored = try? OutboxStoredItem.decode(data, expected: name)
            else { return nil }
            return Item(stored: stored, bodyFile: name.url(.body, in: deadDirectory))
        }
    }

    /// Puts a dead letter back at the end of the line with its attempts reset (its age is
    /// not: an expired item expires again unless ``Configuration/maximumAge`` allows it).
    /// - Parameter id: The item's identifier.
    /// - Throws: ``ConveyorError/OutboxFailureReason/noSuchItem(_:)``, a limit, or a write failure.
    public func retryDeadLetter(_ id: UUID) throws {
        let (name, stored) = try deadLetter(id)
        var fresh = stored
        fresh.record.attempts = 0
        fresh.record.lastError = nil
        let reserved = stored.record.bodyLength ?? 0
        let sequence = try reserve(bytes: reserved)
        let newName = OutboxItemName(sequence: sequence, id: id)
        do {
            if stored.record.bodyLength != nil, !stored.record.bodyInline {
                try DurableFiles.move(name.url(.body, in: deadDirectory), to: newName.url(.body, in: itemsDirectory))
            }
            try writeRecord(fresh, as: newName, in: itemsDirectory)
            DurableFiles.remove(name.url(.item, in: deadDirectory))
            DurableFiles.remove(name.url(.reported, in: deadDirectory))
            try? DurableFiles.syncDirectory(deadDirectory)
        } catch {
            unreserve(bytes: reserved)
            throw ConveyorError.outboxFailed(reason: .writeFailed(error.url, error.error))
        }
        let onDisk = diskBytes(newName, in: itemsDirectory)
        state.withLock { $0.bytes += onDisk - reserved }
        enqueueAccepted(newName)
    }

    /// Deletes a dead letter and its body.
    /// - Parameter id: The item's identifier.
    /// - Throws: ``ConveyorError/OutboxFailureReason/noSuchItem(_:)``.
    public func removeDeadLetter(_ id: UUID) throws {
        let (name, _) = try deadLetter(id)
        DurableFiles.remove(name.url(.item, in: deadDirectory))
        DurableFiles.remove(name.url(.body, in: deadDirectory))
        DurableFiles.remove(name.url(.reported, in: deadDirectory))
        try? DurableFiles.syncDirectory(deadDirectory)
    }

    private func deadLetter(_ id: UUID) throws -> (OutboxItemName, OutboxStoredItem) {
        var found: OutboxItemName?
        try? DurableFiles.forEachName(in: deadDirectory) { fileName in
            if let (name, kind) = OutboxItemName.parse(fileName), kind == .item, name.id == id { found = name }
        }
        guard let name = found, let data = try? Data(contentsOf: name.url(.item, in: deadDirectory)),
            let stored = try? OutboxStoredItem.decode(data, expected: name)
        else { throw ConveyorError.outboxFailed(reason: .noSuchItem(id)) }
        return (name, stored)
    }

    /// Creates the directories and takes the directory's lock.
    private func openDirectory() throws -> DirectoryLock {
        for url in [directory, itemsDirectory, deadDirectory, corruptDirectory] {
            do {
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            } catch {
                throw ConveyorError.outboxFailed(reason: .writeFailed(url, error))
            }
        }
        let lockFile = directory.appendingPathComponent("lock")
        do {
            guard let lock = try DirectoryLock.acquire(lockFile) else {
                throw ConveyorError.outboxFailed(reason: .directoryInUse(directory))
            }
            return lock
        } catch let error as DurableFiles.Failure {
            throw ConveyorError.outboxFailed(reason: .writeFailed(error.url, error.error))
        }
    }

    /// Pauses delivery while the client's reachability says its host is unreachable.
    private func watchReachability() {
        guard let reachability = client.reachability else { return }
        let token = reachability.addHandler { [weak self] status in
            guard let self else { return }
            self.queue.async { self.reachabilityChanged(to: status) }
        }
        let current = reachability.status
        state.withLock {
            $0.reachabilityToken = token
            $0.offline = current == .notReachable
        }
    }
}

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
/// let id = try await outbox.send(method: .post, path: "comments", body: Comment(text: "On the train"))
/// ```
///
/// - `send` returns once the request and its body are written and `fsync`ed, their names
///   durable; it never waits for the network.
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
public final class Outbox: Sendable {
    // Sendable, checked by the compiler: all mutable state is in `state`, behind one Lock; the
    // other stored properties are set once in init. Disk work and decisions run on `queue`.

    /// The directory the items live in (created if needed).
    public let directory: URL
    /// The settings given at creation, with numbers out of range clamped (a NaN time is the
    /// default's, a negative one 0; at least one delivery at a time and one attempt).
    public let configuration: Configuration
    /// The client every attempt goes through.
    public let client: HTTPClient

    let itemsDirectory: URL
    let deadDirectory: URL
    let corruptDirectory: URL
    /// Disk work, attempts and decisions run here, one at a time.
    let queue: DispatchQueue
    /// Every piece of file work outside `queue`: a `send` from its reservation to its return,
    /// the dead-letter calls, the removal of finished items' files (which runs beside `queue`:
    /// an unlink costs more than the rest of a delivery on some file systems). Each is entered
    /// under the state's lock while it is not `closed` (``beginFileWork()``), so `close()`, which
    /// sets `closed` under that lock and then waits for the group, returns only after the last of
    /// them: no file of this outbox is touched once the next owner may have the directory.
    let fileWork = DispatchGroup()
    /// Marks `queue`, so that `close()` knows when it is called from it.
    static let queueKey = DispatchSpecificKey<Bool>()
    let channel: OutboxResultChannel

    /// One item on its way: taken from the line, loaded, in an attempt or waiting for the next.
    /// Keyed by the item's identifier: a directory written by a misbehaving owner may hold two
    /// items with one sequence number.
    struct Delivery {
        let name: OutboxItemName
        /// The record and its inline body, once read.
        var stored: OutboxStoredItem?
        /// What its files take on disk (record and body file), counted off ``pendingBytes`` when it goes.
        var bytes: Int64 = 0
        /// Failures to connect in a row: backoff grows with them, but they are not attempts.
        var connectFailures = 0
        /// Bumped by every new schedule and attempt: a timer whose generation is stale does nothing.
        var retryGeneration = 0
        /// Failures in a row to mark or remove its files (a read-only directory): backoff grows with them.
        var fileFailures = 0
        /// A retry timer is armed (the network's return brings it forward).
        var waitsForRetry = false
        /// Parked because reachability said the host is unreachable.
        var waitsForNetwork = false
        /// ``Outbox/retryNow()`` came while an attempt was under way: a failure of it is tried
        /// again at once instead of after its backoff.
        var retriesAtOnce = false
        var operation: HTTPRequestOperation?
    }

    struct State {
        /// Waiting items in order; those before `head` are taken.
        var pending: [OutboxItemName] = []
        var head = 0
        var inFlight: [UUID: Delivery] = [:]
        var count = 0
        var bytes: Int64 = 0
        var nextSequence: UInt64 = 1
        var started = false
        /// A `pump()` is queued for accepted items: a burst of sends wakes the queue once.
        var pumpQueued = false
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
        self.configuration = configuration.clamped
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
    ///
    /// It counts an item from the moment `send` reserves its place until its result is handed
    /// over, and drops at that moment, before the item's files are removed: when a result
    /// handler returns; in a ``results`` loop, when the loop asks for the next result or its
    /// iterator is released (a loop left with `break` releases it at the end of the loop; in
    /// top-level code the iterator lives until the end of its scope); or at ``close()``, for the
    /// result a handler or a loop body has then. A result set aside as corrupt counts the same way.
    /// The item's files are removed just after, in the background: ``close()`` waits for that,
    /// so close the outbox before the process exits (a process that exits at a count of 0
    /// without closing may leave files, and get those results again, flagged, next time).
    public var pendingCount: Int { state.withLock { $0.count } }

    /// What the waiting items take on disk, records and bodies; it drops with ``pendingCount``.
    public var pendingBytes: Int64 { state.withLock { $0.bytes } }

    /// Sets the block each result is handed to — one at a time, in order, on the client's
    /// callback queue (``HTTPClient/Configuration/callbackQueue``, the main queue on Apple
    /// platforms) — and starts delivery. An item's files are removed in the background after the
    /// block returns (``close()`` waits for the block and for that); if the process stops while
    /// the block runs or before its files are gone, the item is sent again after a restart (with
    /// the same `Idempotency-Key`) and its result handed over again, marked
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
    /// and `send` throws ``ConveyorError/OutboxFailureReason/closed``. A `send` (or dead-letter
    /// call) already writing when `close()` begins completes first: `close()` returns after it,
    /// so every identifier a `send` returned is on disk for the next owner. A result handler still
    /// running is waited for, and its result counts as handed over (``pendingCount`` drops, its
    /// files go): when `close()` returns, no handler of this outbox runs, and none begins later.
    /// Called from inside a result handler, `close()` does not wait for that handler (its result
    /// counts as handed over at once); never call it from code a running handler waits for
    /// (a block the handler runs with `DispatchQueue.sync`), which would wait for each other.
    /// Called when the outbox is released.
    public func close() {
        // First: the result a loop or a running handler holds counts as handed over (its files'
        // removal is queued now, while the outbox is still open); a handler running is waited
        // for, and one not yet begun is not called (its item stays for the next owner, who hands
        // the result over, flagged).
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

    /// The items that ran out of attempts or time, oldest first, read from disk. A letter that
    /// cannot be read back (truncated, edited, a symbolic link) is moved to `corrupt/` and
    /// reported as a result, ``Outcome/failed(_:)`` with
    /// ``ConveyorError/OutboxFailureReason/corruptItem(movedTo:detail:)``, not silently left out.
    /// - Returns: The dead letters.
    /// - Throws: ``ConveyorError/outboxFailed(reason:)``: ``ConveyorError/OutboxFailureReason/closed``
    ///   after ``close()``, ``ConveyorError/OutboxFailureReason/writeFailed(_:_:)`` when the
    ///   directory cannot be read.
    public func deadLetters() throws -> [Item] {
        try beginFileWork()
        defer { fileWork.leave() }
        var letters: [Item] = []
        var unreadable: [(OutboxItemName, String)] = []
        for name in try deadLetterNames() {
            do {
                let stored = try OutboxStoredItem.read(name.url(.item, in: deadDirectory), expected: name).stored
                letters.append(Item(stored: stored, bodyFile: name.url(.body, in: deadDirectory)))
            } catch let failure as DurableFiles.Failure where failure.code == ENOENT {
                continue  // retried or removed since the names were read
            } catch {
                unreadable.append((name, "unreadable dead letter: \(error)"))
            }
        }
        if !unreadable.isEmpty {
            queue.async { [self, unreadable] in
                for (name, detail) in unreadable { setAsideCorruptDeadLetter(name, detail: detail) }
            }
        }
        return letters
    }

    /// Puts a dead letter back at the end of the line with its attempts reset (its age is
    /// not: an expired item expires again unless ``Configuration/maximumAge`` allows it).
    ///
    /// Its record is written into `items/` under its new place first, then its body file moved
    /// there, then its record in `dead/` removed: a process stopped in between leaves the letter
    /// in both folders, and the next start finishes the move (see <doc:SendingWhileOffline>).
    /// - Parameter id: The item's identifier.
    /// - Throws: ``ConveyorError/OutboxFailureReason/noSuchItem(_:)``, a limit, a write failure,
    ///   or ``ConveyorError/OutboxFailureReason/closed``.
    public func retryDeadLetter(_ id: UUID) throws {
        try beginFileWork()
        defer { fileWork.leave() }
        let (name, stored) = try deadLetter(id)
        var fresh = stored
        fresh.record.attempts = 0
        fresh.record.lastError = nil
        let reserved = stored.record.bodyLength ?? 0
        let sequence = try reserve(bytes: reserved)
        let newName = OutboxItemName(sequence: sequence, id: id)
        var recordWritten = false
        do {
            try writeRecord(fresh, as: newName, in: itemsDirectory)
            recordWritten = true
            if stored.record.bodyLength != nil, !stored.record.bodyInline {
                try DurableFiles.move(name.url(.body, in: deadDirectory), to: newName.url(.body, in: itemsDirectory))
            }
        } catch {
            // The body is still in `dead/` (a failed rename moves nothing): the new record goes,
            // and the letter stays as it was.
            if recordWritten { DurableFiles.remove(newName.url(.item, in: itemsDirectory)) }
            unreserve(bytes: reserved)
            throw ConveyorError.outboxFailed(reason: .writeFailed(error.url, error.error))
        }
        // From here the item is in line; what is left in `dead/` a next start removes.
        reportFailure(Result { () throws(DurableFiles.Failure) in try DurableFiles.syncDirectory(itemsDirectory) })
        reportFailure(DurableFiles.removeFile(name.url(.item, in: deadDirectory)))
        reportFailure(DurableFiles.removeFile(name.url(.reported, in: deadDirectory)))
        reportFailure(Result { () throws(DurableFiles.Failure) in try DurableFiles.syncDirectory(deadDirectory) })
        let onDisk = diskBytes(newName, in: itemsDirectory)
        state.withLock { $0.bytes += onDisk - reserved }
        enqueueAccepted(newName)
    }

    /// Deletes a dead letter and its body (its record first: a body left alone is removed by the next start).
    /// - Parameter id: The item's identifier.
    /// - Throws: ``ConveyorError/OutboxFailureReason/noSuchItem(_:)``, ``ConveyorError/OutboxFailureReason/closed``,
    ///   or ``ConveyorError/OutboxFailureReason/writeFailed(_:_:)`` when its record cannot be removed.
    public func removeDeadLetter(_ id: UUID) throws {
        try beginFileWork()
        defer { fileWork.leave() }
        let (name, _) = try deadLetter(id)
        if case .failure(let failure) = DurableFiles.removeFile(name.url(.item, in: deadDirectory)) {
            throw ConveyorError.outboxFailed(reason: .writeFailed(failure.url, failure.error))
        }
        reportFailure(DurableFiles.removeFile(name.url(.body, in: deadDirectory)))
        reportFailure(DurableFiles.removeFile(name.url(.reported, in: deadDirectory)))
        reportFailure(Result { () throws(DurableFiles.Failure) in try DurableFiles.syncDirectory(deadDirectory) })
    }

    /// The dead letters' names, oldest first.
    private func deadLetterNames() throws(ConveyorError) -> [OutboxItemName] {
        var names: [OutboxItemName] = []
        do {
            try DurableFiles.forEachName(in: deadDirectory) { fileName in
                if let (name, kind) = OutboxItemName.parse(fileName), kind == .item { names.append(name) }
            }
        } catch {
            throw ConveyorError.outboxFailed(reason: .writeFailed(error.url, error.error))
        }
        return names.sorted()
    }

    private func deadLetter(_ id: UUID) throws -> (OutboxItemName, OutboxStoredItem) {
        guard let name = try deadLetterNames().first(where: { $0.id == id }),
            let stored = try? OutboxStoredItem.read(name.url(.item, in: deadDirectory), expected: name).stored
        else { throw ConveyorError.outboxFailed(reason: .noSuchItem(id)) }
        return (name, stored)
    }

    /// Admits one piece of file work outside `queue` (see ``fileWork``); the caller leaves the
    /// group when it is done.
    /// - Throws: ``ConveyorError/OutboxFailureReason/closed`` once ``close()`` has begun.
    func beginFileWork() throws(ConveyorError) {
        try state.withLock { state throws(ConveyorError) in
            guard !state.closed else { throw ConveyorError.outboxFailed(reason: .closed) }
            fileWork.enter()
        }
    }

    /// Reports a failed rename, removal or sync of the outbox's own files: posts
    /// `Notification.Name.conveyorOutboxFileOperationFailed`.
    func reportFailure(_ result: Result<Void, DurableFiles.Failure>) {
        guard case .failure(let failure) = result else { return }
        let error = ConveyorError.outboxFailed(reason: .writeFailed(failure.url, failure.error))
        NotificationCenter.default.post(name: .conveyorOutboxFileOperationFailed, object: self, userInfo: ["error": error])
    }

    /// Creates the directories and takes the directory's lock.
    private func openDirectory() throws -> DirectoryLock {
        // 0700, whatever the umask, also for directories an earlier version made 0755 and for
        // the missing parents the outbox creates: items carry credentials and personal data.
        for url in [directory, itemsDirectory, deadDirectory, corruptDirectory] {
            do {
                try DurableFiles.createDirectories(url)
                try DurableFiles.restrictDirectory(url)
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

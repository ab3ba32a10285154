import Foundation

extension Outbox {
    /// Hands a final result over, then removes the item. Before it is offered the record is
    /// renamed `.reported`, so that after a crash from then on the result comes again, flagged
    /// as a redelivery, rather than never — or twice unflagged. When that rename fails (a
    /// directory made read-only) the result is not handed over: the failure is reported
    /// (`Notification.Name.conveyorOutboxFileOperationFailed`) and the rename tried
    /// again after a backoff, the outcome kept. On `queue`.
    func finish(_ name: OutboxItemName, _ stored: OutboxStoredItem, _ outcome: Outcome) {
        guard !state.withLock({ $0.closed }) else { return }  // the next owner sends it again
        let redelivery = state.withLock { $0.redelivered.contains(name.id) }
        let items = itemsDirectory
        if !redelivery {
            do {
                try DurableFiles.move(name.url(.item, in: items), to: name.url(.reported, in: items))
            } catch {
                reportFailure(.failure(error))
                return retryFinish(name, stored, outcome)
            }
        }
        state.withLock { $0.inFlight[name.id]?.fileFailures = 0 }
        let record = stored.record
        let result = ItemResult(
            id: record.id, item: Item(stored: stored, bodyFile: name.url(.body, in: itemsDirectory)), outcome: outcome,
            isRedelivery: redelivery)
        channel.offer(
            .init(result: result) { [self] in
                // Handed over: it stops counting now; its files go in the background. Entered
                // under the lock, so a `close()` that has begun is waited for — or wins, and the
                // next owner, who finds the record `.reported`, hands the result over again, flagged.
                guard handedOver(name) else { return }
                DispatchQueue.global(qos: .utility).async { [self] in
                    defer { fileWork.leave() }
                    // The record goes first: without it the body is debris the next start removes.
                    // A record that cannot be removed keeps its body (the next start hands the
                    // result over again, flagged).
                    let removed = [
                        DurableFiles.removeFile(name.url(.reported, in: items)), DurableFiles.removeFile(name.url(.item, in: items)),
                    ]
                    for result in removed { reportFailure(result) }
                    guard removed.allSatisfy({ if case .success = $0 { true } else { false } }) else { return }
                    if !record.bodyInline, record.bodyLength != nil { reportFailure(DurableFiles.removeFile(name.url(.body, in: items))) }
                }
            })
    }

    /// Tries a failed finish again after a backoff (unless the outbox closed meanwhile). On `queue`.
    private func retryFinish(_ name: OutboxItemName, _ stored: OutboxStoredItem, _ outcome: Outcome) {
        let failures = state.withLock { state -> Int? in
            guard !state.closed, state.inFlight[name.id] != nil else { return nil }
            state.inFlight[name.id]?.fileFailures += 1
            return state.inFlight[name.id]?.fileFailures
        }
        guard let failures else { return }
        queue.asyncAfter(deadline: Seconds.dispatchTime(after: backoff(after: failures))) { [weak self] in
            self?.finish(name, stored, outcome)
        }
    }

    /// Moves an item that ran out of attempts or time to `dead/` — its record written there
    /// first, then its body file moved, then its record here removed (a start that finds it in
    /// both places finishes the move) — and reports it. On `queue`.
    func moveToDeadLetters(_ name: OutboxItemName, _ stored: OutboxStoredItem, error: ConveyorError) {
        guard !state.withLock({ $0.closed }) else { return }
        var stored = stored
        stored.record.lastError = OutboxRecord.text(of: error)
        do {
            try writeRecord(stored, as: name, in: deadDirectory)
            if stored.record.bodyLength != nil, !stored.record.bodyInline {
                try DurableFiles.move(name.url(.body, in: itemsDirectory), to: name.url(.body, in: deadDirectory))
            }
        } catch {
            // A full disk: the item stays in line and is tried again later.
            DurableFiles.remove(name.url(.item, in: deadDirectory))
            return schedule(name, after: configuration.maximumDelay)
        }
        // The record here goes last: a start that finds it in both places finishes the move.
        reportFailure(DurableFiles.removeFile(name.url(.item, in: itemsDirectory)))
        reportFailure(DurableFiles.removeFile(name.url(.reported, in: itemsDirectory)))
        reportFailure(Result { () throws(DurableFiles.Failure) in try DurableFiles.syncDirectory(itemsDirectory) })
        reportFailure(Result { () throws(DurableFiles.Failure) in try DurableFiles.syncDirectory(deadDirectory) })
        let dead = stored
        let deadFolder = deadDirectory
        let result = ItemResult(
            id: name.id, item: Item(stored: dead, bodyFile: name.url(.body, in: deadFolder)), outcome: .deadLettered(error),
            isRedelivery: false)
        channel.offer(
            .init(result: result) { [self] in
                guard handedOver(name) else { return }
                // A marker: its loss in a crash costs a flagged report again, not an item.
                DurableFiles.touch(name.url(.reported, in: deadFolder))
                fileWork.leave()
            })
    }

    /// Reports a dead letter whose result the last process did not hand over. On `queue`.
    func reportDeadLetter(_ name: OutboxItemName) {
        let stored: OutboxStoredItem
        do {
            stored = try OutboxStoredItem.read(name.url(.item, in: deadDirectory), expected: name).stored
        } catch let failure as DurableFiles.Failure where failure.code == ENOENT {
            return  // retried or removed meanwhile (`retryDeadLetter` runs on the caller's thread)
        } catch {
            return setAsideCorruptDeadLetter(name, detail: "unreadable dead letter: \(error)")
        }
        let error = ConveyorError.outboxFailed(
            reason: .attemptsExhausted(
                attempts: stored.record.attempts, lastError: DeadLetterError(description: stored.record.lastError ?? "unknown")))
        // The last process moved it here and may or may not have handed its result over.
        let result = ItemResult(
            id: name.id, item: Item(stored: stored, bodyFile: name.url(.body, in: deadDirectory)), outcome: .deadLettered(error),
            isRedelivery: true)
        let dead = deadDirectory
        channel.offer(
            .init(result: result) { [self] in
                guard (try? beginFileWork()) != nil else { return }
                DurableFiles.touch(name.url(.reported, in: dead))
                fileWork.leave()
            })
    }

    /// Moves a dead letter that cannot be read to `corrupt/` and reports it. On `queue`.
    func setAsideCorruptDeadLetter(_ name: OutboxItemName, detail: String) {
        // Gone already: set aside by the report at start-up (or removed) since it was read.
        guard !state.withLock({ $0.closed }), DurableFiles.exists(name.url(.item, in: deadDirectory)) else { return }
        let movedTo = name.url(.item, in: corruptDirectory)
        reportFailure(Result { () throws(DurableFiles.Failure) in try DurableFiles.move(name.url(.item, in: deadDirectory), to: movedTo) })
        if DurableFiles.exists(name.url(.body, in: deadDirectory)) {
            reportFailure(
                Result { () throws(DurableFiles.Failure) in
                    try DurableFiles.move(
                        name.url(.body, in: deadDirectory), to: name.url(.body, in: corruptDirectory))
                })
        }
        DurableFiles.remove(name.url(.reported, in: deadDirectory))
        let error = ConveyorError.outboxFailed(reason: .corruptItem(movedTo: movedTo, detail: detail))
        channel.offer(.init(result: ItemResult(id: name.id, item: nil, outcome: .failed(error), isRedelivery: false)) {})
    }

    /// Moves an unreadable item (or a symbolic link where its file should be) to `corrupt/` and
    /// reports it; the line goes on. On `queue`.
    func setAsideCorrupt(_ name: OutboxItemName, detail: String) {
        let movedTo = name.url(.item, in: corruptDirectory)
        let bytes = diskBytes(name, in: itemsDirectory)
        state.withLock { $0.inFlight[name.id]?.bytes = bytes }
        let body = name.url(.body, in: itemsDirectory)
        if DurableFiles.exists(body) {
            reportFailure(
                Result { () throws(DurableFiles.Failure) in
                    try DurableFiles.move(body, to: name.url(.body, in: corruptDirectory))
                })
        }
        // Renamed, not followed: a link is moved as a link.
        reportFailure(Result { () throws(DurableFiles.Failure) in try DurableFiles.move(recordURL(name), to: movedTo) })
        reportFailure(Result { () throws(DurableFiles.Failure) in try DurableFiles.syncDirectory(itemsDirectory) })
        let error = ConveyorError.outboxFailed(reason: .corruptItem(movedTo: movedTo, detail: detail))
        channel.offer(
            .init(result: ItemResult(id: name.id, item: nil, outcome: .failed(error), isRedelivery: false)) { [self] in
                guard handedOver(name) else { return }
                fileWork.leave()
            })
    }

    /// What an item's files take on disk: its record and its body file (what ``pendingBytes`` counts).
    func diskBytes(_ name: OutboxItemName, in directory: URL) -> Int64 {
        [OutboxItemName.Kind.item, .reported, .body].reduce(0) { $0 + (DurableFiles.size(of: name.url($1, in: directory)) ?? 0) }
    }

    /// A result was handed over: the item stops counting at once and its place goes to the next.
    /// False when the outbox is closed (the next owner has the item) or the item is not in
    /// flight; true means file work was entered, which the caller leaves.
    private func handedOver(_ name: OutboxItemName) -> Bool {
        let open = state.withLock { state -> Bool in
            guard !state.closed, let bytes = state.inFlight[name.id]?.bytes else { return false }
            fileWork.enter()
            state.count -= 1
            state.bytes -= bytes
            return true
        }
        if open { queue.async { [self] in freeSlot(name) } }
        return open
    }

    /// Frees the item's place in the deliveries and starts the next. On `queue`.
    private func freeSlot(_ name: OutboxItemName) {
        state.withLock { state in
            state.inFlight.removeValue(forKey: name.id)
            state.redelivered.remove(name.id)
        }
        pump()
    }
}

/// A dead letter's last failure as it was recorded (text), when the letter is reported after a restart.
struct DeadLetterError: Error, CustomStringConvertible {
    let description: String
}

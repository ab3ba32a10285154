import Foundation

extension Outbox {
    /// Hands a final result over, then removes the item. Just before it is handed over the
    /// record is renamed `.reported`, so that after a crash in between the result comes again,
    /// flagged as a redelivery, rather than never. On `queue`.
    func finish(_ name: OutboxItemName, _ stored: OutboxStoredItem, _ outcome: Outcome) {
        guard !state.withLock({ $0.closed }) else { return }  // the next owner sends it again
        let redelivery = state.withLock { $0.redelivered.contains(name.id) }
        let record = stored.record
        let result = ItemResult(
            id: record.id, item: Item(stored: stored, bodyFile: name.url(.body, in: itemsDirectory)), outcome: outcome,
            isRedelivery: redelivery)
        let items = itemsDirectory
        channel.offer(
            .init(
                result: result,
                handingOver: {
                    if !redelivery { try? DurableFiles.move(name.url(.item, in: items), to: name.url(.reported, in: items)) }
                },
                acknowledge: { [self] in
                    // Closed: the directory may have a new owner, who delivers it again.
                    let bytes = state.withLock { $0.closed ? nil : $0.inFlight[name.sequence]?.bytes }
                    guard let bytes else { return }
                    // The next item may start while this one's files go; it counts as pending until they are gone.
                    fileWork.enter()
                    queue.async { [self] in freeSlot(name) }
                    DispatchQueue.global(qos: .utility).async { [self] in
                        // The record goes first: without it the body is debris the next start removes.
                        DurableFiles.remove(name.url(.reported, in: items))
                        DurableFiles.remove(name.url(.item, in: items))
                        if !record.bodyInline, record.bodyLength != nil { DurableFiles.remove(name.url(.body, in: items)) }
                        forget(bytes: bytes)
                        fileWork.leave()
                    }
                }))
    }

    /// Moves an item that ran out of attempts or time to `dead/` — its record written there
    /// first, then its body file moved, then its record here removed (a start that finds it in
    /// both places finishes the move) — and reports it. On `queue`.
    func moveToDeadLetters(_ name: OutboxItemName, _ stored: OutboxStoredItem, error: ConveyorError) {
        guard !state.withLock({ $0.closed }) else { return }
        var stored = stored
        stored.record.lastError = String(describing: error)
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
        DurableFiles.remove(name.url(.item, in: itemsDirectory))
        DurableFiles.remove(name.url(.reported, in: itemsDirectory))
        try? DurableFiles.syncDirectory(itemsDirectory)
        try? DurableFiles.syncDirectory(deadDirectory)
        let dead = stored
        let result = ItemResult(
            id: name.id, item: Item(stored: dead, bodyFile: name.url(.body, in: deadDirectory)), outcome: .deadLettered(error),
            isRedelivery: false)
        channel.offer(
            .init(result: result) { [self] in
                guard !state.withLock({ $0.closed }) else { return }
                queue.async { [self] in
                    DurableFiles.touch(name.url(.reported, in: deadDirectory))
                    release(name, bytes: diskBytes(name, in: deadDirectory))
                }
            })
    }

    /// Reports a dead letter whose result the last process did not hand over. On `queue`.
    func reportDeadLetter(_ name: OutboxItemName) {
        guard let data = try? Data(contentsOf: name.url(.item, in: deadDirectory)),
            let stored = try? OutboxStoredItem.decode(data, expected: name)
        else {
            let movedTo = corruptDirectory.appendingPathComponent(name.stem + ".item")
            try? DurableFiles.move(name.url(.item, in: deadDirectory), to: movedTo)
            try? DurableFiles.move(name.url(.body, in: deadDirectory), to: corruptDirectory.appendingPathComponent(name.stem + ".body"))
            let error = ConveyorError.outboxFailed(reason: .corruptItem(movedTo: movedTo, detail: "unreadable dead letter"))
            channel.offer(.init(result: ItemResult(id: name.id, item: nil, outcome: .failed(error), isRedelivery: false)) {})
            return
        }
        let error = ConveyorError.outboxFailed(
            reason: .attemptsExhausted(
                attempts: stored.record.attempts, lastError: DeadLetterError(description: stored.record.lastError ?? "unknown")))
        // The last process moved it here and may or may not have handed its result over.
        let result = ItemResult(
            id: name.id, item: Item(stored: stored, bodyFile: name.url(.body, in: deadDirectory)), outcome: .deadLettered(error),
            isRedelivery: true)
        let dead = deadDirectory
        channel.offer(.init(result: result) { DurableFiles.touch(name.url(.reported, in: dead)) })
    }

    /// Moves an unreadable item to `corrupt/` and reports it; the line goes on. On `queue`.
    func setAsideCorrupt(_ name: OutboxItemName, detail: String) {
        let movedTo = corruptDirectory.appendingPathComponent(name.stem + ".item")
        let bytes = diskBytes(name, in: itemsDirectory)
        try? DurableFiles.move(name.url(.body, in: itemsDirectory), to: corruptDirectory.appendingPathComponent(name.stem + ".body"))
        try? DurableFiles.move(recordURL(name), to: movedTo)
        try? DurableFiles.syncDirectory(itemsDirectory)
        let error = ConveyorError.outboxFailed(reason: .corruptItem(movedTo: movedTo, detail: detail))
        channel.offer(
            .init(result: ItemResult(id: name.id, item: nil, outcome: .failed(error), isRedelivery: false)) { [self] in
                queue.async { [self] in release(name, bytes: bytes) }
            })
    }

    /// What an item's files take on disk: its record and its body file (what ``pendingBytes`` counts).
    func diskBytes(_ name: OutboxItemName, in directory: URL) -> Int64 {
        [OutboxItemName.Kind.item, .reported, .body].reduce(0) { $0 + (DurableFiles.size(of: name.url($1, in: directory)) ?? 0) }
    }

    /// Frees the item's place and its bytes, and starts the next. On `queue`.
    private func release(_ name: OutboxItemName, bytes: Int64) {
        guard state.withLock({ $0.inFlight[name.sequence] != nil }) else { return }
        forget(bytes: bytes)
        freeSlot(name)
    }

    /// Frees the item's place in the deliveries and starts the next. On `queue`.
    private func freeSlot(_ name: OutboxItemName) {
        state.withLock { state in
            state.inFlight.removeValue(forKey: name.sequence)
            state.redelivered.remove(name.id)
        }
        pump()
    }

    /// Takes a finished item off the counts, once its files are gone.
    private func forget(bytes: Int64) {
        state.withLock { state in
            state.count -= 1
            state.bytes -= bytes
        }
    }
}

/// A dead letter's last failure as it was recorded (text), when the letter is reported after a restart.
struct DeadLetterError: Error, CustomStringConvertible {
    let description: String
}

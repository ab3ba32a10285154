import Foundation

extension Outbox {
    /// Hands a final result over, then removes the item. A marker file says "handed over, maybe"
    /// until the files are gone, so that after a crash in between the result comes again,
    /// flagged as a redelivery, rather than never. On `queue`.
    func finish(_ name: OutboxItemName, _ record: OutboxRecord, _ outcome: Outcome) {
        guard !state.withLock({ $0.closed }) else { return }  // the next owner sends it again
        let redelivery = state.withLock { $0.redelivered.contains(record.id) }
        let result = ItemResult(
            id: record.id, item: Item(record: record, bodyFile: name.url(.body, in: itemsDirectory)), outcome: outcome,
            isRedelivery: redelivery)
        let marker = name.url(.reported, in: itemsDirectory)
        channel.offer(
            .init(result: result, handingOver: { DurableFiles.touch(marker) }) { [self] in
                queue.async { [self] in
                    // The record goes first: without it the rest is debris the next start removes.
                    DurableFiles.remove(name.url(.item, in: itemsDirectory))
                    DurableFiles.remove(name.url(.body, in: itemsDirectory))
                    DurableFiles.remove(name.url(.reported, in: itemsDirectory))
                    release(name, id: record.id, bytes: record.bodyLength ?? 0)
                }
            })
    }

    /// Moves an item that ran out of attempts or time to `dead/` — its record written there
    /// first, then its body moved, then its record here removed (a start that finds it in both
    /// places finishes the move) — and reports it. On `queue`.
    func moveToDeadLetters(_ name: OutboxItemName, _ record: OutboxRecord, error: ConveyorError) {
        guard !state.withLock({ $0.closed }) else { return }
        var record = record
        record.lastError = String(describing: error)
        do {
            try writeRecord(record, as: name, in: deadDirectory)
            if record.bodyLength != nil {
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
        let dead = record
        let result = ItemResult(
            id: dead.id, item: Item(record: dead, bodyFile: name.url(.body, in: deadDirectory)), outcome: .deadLettered(error),
            isRedelivery: false)
        channel.offer(
            .init(result: result) { [self] in
                queue.async { [self] in
                    DurableFiles.touch(name.url(.reported, in: deadDirectory))
                    release(name, id: dead.id, bytes: dead.bodyLength ?? 0)
                }
            })
    }

    /// Reports a dead letter whose result the last process did not hand over. On `queue`.
    func reportDeadLetter(_ name: OutboxItemName) {
        guard let data = try? Data(contentsOf: name.url(.item, in: deadDirectory)),
            let record = try? OutboxRecord.decode(data, expected: name)
        else {
            let movedTo = corruptDirectory.appendingPathComponent(name.stem + ".item")
            try? DurableFiles.move(name.url(.item, in: deadDirectory), to: movedTo)
            try? DurableFiles.move(name.url(.body, in: deadDirectory), to: corruptDirectory.appendingPathComponent(name.stem + ".body"))
            let error = ConveyorError.outboxFailed(reason: .corruptItem(movedTo: movedTo, detail: "unreadable dead letter"))
            channel.offer(.init(result: ItemResult(id: name.id, item: nil, outcome: .failed(error), isRedelivery: false)) {})
            return
        }
        let error = ConveyorError.outboxFailed(
            reason: .attemptsExhausted(attempts: record.attempts, lastError: DeadLetterError(description: record.lastError ?? "unknown")))
        let result = ItemResult(
            id: record.id, item: Item(record: record, bodyFile: name.url(.body, in: deadDirectory)), outcome: .deadLettered(error),
            isRedelivery: false)
        channel.offer(.init(result: result) { [self] in DurableFiles.touch(name.url(.reported, in: deadDirectory)) })
    }

    /// Moves an unreadable item to `corrupt/` and reports it; the line goes on. On `queue`.
    func setAsideCorrupt(_ name: OutboxItemName, detail: String) {
        let movedTo = corruptDirectory.appendingPathComponent(name.stem + ".item")
        let bodyBytes = DurableFiles.size(of: name.url(.body, in: itemsDirectory)) ?? 0
        try? DurableFiles.move(name.url(.body, in: itemsDirectory), to: corruptDirectory.appendingPathComponent(name.stem + ".body"))
        try? DurableFiles.move(name.url(.item, in: itemsDirectory), to: movedTo)
        DurableFiles.remove(name.url(.reported, in: itemsDirectory))
        try? DurableFiles.syncDirectory(itemsDirectory)
        let error = ConveyorError.outboxFailed(reason: .corruptItem(movedTo: movedTo, detail: detail))
        channel.offer(
            .init(result: ItemResult(id: name.id, item: nil, outcome: .failed(error), isRedelivery: false)) { [self] in
                queue.async { [self] in release(name, id: name.id, bytes: bodyBytes) }
            })
    }

    /// Frees the item's place and its bytes, and starts the next. On `queue`.
    private func release(_ name: OutboxItemName, id: UUID, bytes: Int64) {
        state.withLock { state in
            guard state.inFlight.removeValue(forKey: name.sequence) != nil else { return }
            state.count -= 1
            state.bytes -= bytes
            state.redelivered.remove(id)
        }
        pump()
    }
}

/// A dead letter's last failure as it was recorded (text), when the letter is reported after a restart.
struct DeadLetterError: Error, CustomStringConvertible {
    let description: String
}

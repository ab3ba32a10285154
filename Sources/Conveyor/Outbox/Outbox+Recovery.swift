import Foundation

extension Outbox {
    /// Reads the directory as the last process left it, whenever it stopped (a SIGKILL between
    /// any two of its writes; the steps of each change are in <doc:SendingWhileOffline>):
    /// - temporary files (a record being replaced) are removed: the record they were to replace
    ///   is still there (a new item's record is written in place; one a crash cut short has no
    ///   end mark and is set aside, reported as unfinished, when its turn comes — not here, where
    ///   no record is read);
    /// - a record both in `items/` and `dead/` under one name was being moved to the dead
    ///   letters: the move is finished (its body moved if it is still here, the record here removed);
    /// - a dead letter whose identifier is also in `items/` under a later name was being retried:
    ///   the retry is finished (its body moved to the new name if it is still in `dead/`, the
    ///   record in `dead/` removed) — the body goes before any record that names it;
    /// - then a body file without its record is removed, in `items/` and in `dead/` (the item was
    ///   never accepted, or it finished or was removed: its record goes first);
    /// - a file that is no item's — a name the outbox would not write, in upper case, not UTF-8,
    ///   or with a sequence number past ``OutboxItemName/maximumSequence`` — is moved to `corrupt/`;
    /// - a record named `.reported` (its result was being handed over) is delivered again and its
    ///   result marked as a redelivery.
    /// Only names are read (and body sizes): 100,000 items cost their names, not their records.
    func recover() throws {
        var items: [OutboxItemName] = []
        var bodies: Set<OutboxItemName> = []
        var reported: Set<OutboxItemName> = []
        var dead: [OutboxItemName] = []
        var deadBodies: Set<OutboxItemName> = []
        var deadReported: Set<OutboxItemName> = []
        do {
            let foreignDead = try DurableFiles.forEachName(in: deadDirectory) { fileName in
                switch OutboxItemName.parse(fileName) {
                case (let name, .item)?: dead.append(name)
                case (let name, .reported)?: deadReported.insert(name)
                case (let name, .body)?: deadBodies.insert(name)
                case nil: setAside(fileName, in: deadDirectory)
                }
            }
            for bytes in foreignDead { setAside(rawName: bytes, in: deadDirectory) }
            let foreignItems = try DurableFiles.forEachName(in: itemsDirectory) { fileName in
                switch OutboxItemName.parse(fileName) {
                case (let name, .item)?: items.append(name)
                case (let name, .body)?: bodies.insert(name)
                case (let name, .reported)?:
                    // A record renamed as its result was handed over: still an item, delivered
                    // again (put in line below, once, whether or not a `.item` copy is beside it).
                    reported.insert(name)
                case nil: setAside(fileName, in: itemsDirectory)
                }
            }
            for bytes in foreignItems { setAside(rawName: bytes, in: itemsDirectory) }
        } catch {
            throw ConveyorError.outboxFailed(reason: .writeFailed(error.url, error.error))
        }
        // The outbox never leaves two records of one item, but a copied file can: a record beside
        // its `.reported` copy (the `.reported` one stays: the later state, its result flagged) or
        // one identifier under two sequence numbers (the first in line stays). The copies go to
        // `corrupt/` with their bodies, without a result: nothing is sent twice, no name is in line
        // twice. Found with what is read anyway (a stat per `.reported`, the identifiers' map).
        for name in reported {
            if DurableFiles.exists(name.url(.item, in: itemsDirectory)) {
                setAside(name.fileName(.item), in: itemsDirectory)
            } else {
                items.append(name)
            }
        }
        var itemSet = Set(items)
        var copies: [OutboxItemName] = []
        let itemsByID = Dictionary(
            itemSet.map { ($0.id, $0) },
            uniquingKeysWith: { first, second in
                copies.append(max(first, second))
                return min(first, second)
            })
        for name in copies {
            for kind in [OutboxItemName.Kind.item, .reported, .body] where DurableFiles.exists(name.url(kind, in: itemsDirectory)) {
                setAside(name.fileName(kind), in: itemsDirectory)
            }
            itemSet.remove(name)
            bodies.remove(name)
        }
        var deadSet = Set(dead)
        for name in dead {
            if itemSet.contains(name) {
                // Being moved to the dead letters: finish the move.
                if bodies.contains(name) {
                    try? DurableFiles.move(name.url(.body, in: itemsDirectory), to: name.url(.body, in: deadDirectory))
                    deadBodies.insert(name)
                }
                DurableFiles.remove(name.url(.item, in: itemsDirectory))
                DurableFiles.remove(name.url(.reported, in: itemsDirectory))
                bodies.remove(name)
                itemSet.remove(name)
            } else if let retried = itemsByID[name.id], retried.sequence > name.sequence {
                // Being retried: its record is in line under `retried` already; finish the move.
                if deadBodies.contains(name), !bodies.contains(retried) {
                    try? DurableFiles.move(name.url(.body, in: deadDirectory), to: retried.url(.body, in: itemsDirectory))
                    bodies.insert(retried)
                }
                deadBodies.remove(name)
                DurableFiles.remove(name.url(.item, in: deadDirectory))
                DurableFiles.remove(name.url(.reported, in: deadDirectory))
                deadSet.remove(name)
            }
        }
        dead.removeAll { !deadSet.contains($0) }
        items.removeAll { !itemSet.contains($0) }
        for name in bodies where !itemSet.contains(name) { DurableFiles.remove(name.url(.body, in: itemsDirectory)) }
        for name in deadBodies where !deadSet.contains(name) { DurableFiles.remove(name.url(.body, in: deadDirectory)) }
        for name in deadReported where !deadSet.contains(name) { DurableFiles.remove(name.url(.reported, in: deadDirectory)) }
        try? DurableFiles.syncDirectory(itemsDirectory)
        try? DurableFiles.syncDirectory(deadDirectory)
        items.sort()
        var bytes: Int64 = 0
        for name in items { bytes += diskBytes(name, in: itemsDirectory) }
        // Every name read is at most `maximumSequence`: no overflow, whatever was on disk.
        let highest = max(items.last?.sequence ?? 0, dead.map(\.sequence).max() ?? 0)
        state.withLock { state in
            state.pending = items
            state.count = items.count
            state.bytes = bytes
            state.nextSequence = highest + 1
            state.redelivered = Set(reported.filter { itemSet.contains($0) }.map(\.id))
            state.unreportedDead = dead.filter { !deadReported.contains($0) }.sorted()
        }
    }

    /// Removes a temporary file, or moves a stranger aside.
    private func setAside(_ fileName: String, in directory: URL) {
        let url = directory.appendingPathComponent(fileName)
        if fileName.hasPrefix(".tmp-") {
            DurableFiles.remove(url)
        } else {
            reportFailure(
                Result { () throws(DurableFiles.Failure) in
                    try DurableFiles.move(url, to: corruptDirectory.appendingPathComponent(fileName))
                })
        }
    }

    /// Moves a file whose name is not UTF-8 aside, under its bytes in hexadecimal.
    private func setAside(rawName bytes: [UInt8], in directory: URL) {
        let hex = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        let destination = corruptDirectory.appendingPathComponent("not-utf8-" + hex)
        reportFailure(
            Result { () throws(DurableFiles.Failure) in try DurableFiles.move(rawName: bytes, in: directory, to: destination) })
    }
}

import Foundation

extension Outbox {
    /// Reads the directory as the last process left it, whenever it stopped:
    /// - temporary files (a record being written) are removed: their item was never accepted;
    /// - a body file without its record is removed (the item was never accepted, or it finished:
    ///   its record goes first);
    /// - a record both in `items/` and `dead/` was being moved to the dead letters: the move
    ///   is finished;
    /// - a file that is no item's is moved to `corrupt/`;
    /// - a record named `.reported` (its result was being handed over) is delivered again and its
    ///   result marked as a redelivery.
    /// Only names are read (and body sizes): 100,000 items cost their names, not their records.
    func recover() throws {
        var items: [OutboxItemName] = []
        var bodies: Set<OutboxItemName> = []
        var reported: Set<OutboxItemName> = []
        var dead: [OutboxItemName] = []
        var deadReported: Set<OutboxItemName> = []
        do {
            try DurableFiles.forEachName(in: deadDirectory) { fileName in
                switch OutboxItemName.parse(fileName) {
                case (let name, .item)?: dead.append(name)
                case (let name, .reported)?: deadReported.insert(name)
                case (_, .body)?: break
                case nil: setAside(fileName, in: deadDirectory)
                }
            }
            try DurableFiles.forEachName(in: itemsDirectory) { fileName in
                switch OutboxItemName.parse(fileName) {
                case (let name, .item)?: items.append(name)
                case (let name, .body)?: bodies.insert(name)
                case (let name, .reported)?:
                    // A record renamed as its result was handed over: still an item, delivered again.
                    items.append(name)
                    reported.insert(name)
                case nil: setAside(fileName, in: itemsDirectory)
                }
            }
        } catch {
            throw ConveyorError.outboxFailed(reason: .writeFailed(error.url, error.error))
        }
        var itemSet = Set(items)
        items = Array(itemSet)  // a record both as .item and .reported cannot happen, but counts once
        for name in dead where itemSet.contains(name) {
            if bodies.contains(name) { try? DurableFiles.move(name.url(.body, in: itemsDirectory), to: name.url(.body, in: deadDirectory)) }
            DurableFiles.remove(name.url(.item, in: itemsDirectory))
            DurableFiles.remove(name.url(.reported, in: itemsDirectory))
            bodies.remove(name)
            itemSet.remove(name)
        }
        items.removeAll { !itemSet.contains($0) }
        for name in bodies where !itemSet.contains(name) { DurableFiles.remove(name.url(.body, in: itemsDirectory)) }
        try? DurableFiles.syncDirectory(itemsDirectory)
        items.sort()
        var bytes: Int64 = 0
        for name in items { bytes += diskBytes(name, in: itemsDirectory) }
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
            try? DurableFiles.move(url, to: corruptDirectory.appendingPathComponent(fileName))
        }
    }
}

import ConveyorLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The disk layer of ``HTTPCache``: one file per entry in a directory, written atomically
/// (a temporary file renamed into place), evicted least recently used first when over
/// capacity. A file's modification date records its last use, so the order survives restarts.
final class HTTPCacheDiskStore: Sendable {
    // Sendable, checked by the compiler: the index is the only mutable state and sits behind
    // `index`'s Mutex; file operations are atomic renames and removals, safe between instances too.

    struct FileRecord {
        var size: Int
        var lastUse: Date
    }

    struct Index {
        var files: [String: FileRecord] = [:]
        var totalSize = 0
    }

    let directory: URL
    let capacity: Int
    private let index = Lock(Index())

    init(directory: URL, capacity: Int) {
        self.directory = directory
        self.capacity = capacity
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        scan()
    }

    /// Temporary files are named `.tmp-<pid>-<uuid>`, so that a store starting up can tell a
    /// write in progress in another live instance (kept) from one a dead process abandoned.
    static var temporaryPrefix: String { ".tmp-\(getpid())-" }

    /// A temporary file older than this is abandoned whoever wrote it: a write takes
    /// milliseconds (entries are at most 5% of the capacity).
    static let abandonedAfter: TimeInterval = 3600

    /// Whether the temporary file `name` (modified at `date`) can only be a leftover: its
    /// process is gone, or it is older than ``abandonedAfter``. Another live cache's write in
    /// progress — in this process or another — is never removed.
    static func isAbandoned(temporaryFile name: String, modified date: Date?, now: Date = Date()) -> Bool {
        if let date, now.timeIntervalSince(date) > abandonedAfter { return true }
        let parts = name.dropFirst(".tmp-".count).split(separator: "-", maxSplits: 1)
        // `.tmp-<uuid>` (an older version's name) whose first group happens to be digits is not a pid.
        guard parts.count == 2, let pid = pid_t(parts[0]), pid > 0, UUID(uuidString: String(parts[1])) != nil else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    /// Rebuilds the index from the directory and removes temporary files a crash left behind
    /// (see ``isAbandoned(temporaryFile:modified:now:)``).
    private func scan() {
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey]
        let urls = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: keys)) ?? []
        var fresh = Index()
        for url in urls {
            let name = url.lastPathComponent
            if name.hasPrefix(".tmp-") {
                let modified = try? url.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate
                if Self.isAbandoned(temporaryFile: name, modified: modified) { try? FileManager.default.removeItem(at: url) }
                continue
            }
            guard name.hasSuffix(".entry"), let values = try? url.resourceValues(forKeys: Set(keys)) else { continue }
            let size = values.fileSize ?? 0
            fresh.files[name] = FileRecord(size: size, lastUse: values.contentModificationDate ?? .distantPast)
            fresh.totalSize += size
        }
        index.withLock { $0 = fresh }
        evictIfNeeded()
    }

    /// The variants stored under `key` (see ``HTTPCache``), newest first.
    func read(key: String) -> [CachedResponse]? {
        let name = CachedResponse.fileName(forKey: key)
        // A miss costs no system call: the index knows every file this store wrote or found.
        guard index.withLock({ $0.files[name] != nil }) else { return nil }
        let url = directory.appendingPathComponent(name)
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            forget(name)
            return nil
        }
        defer { try? handle.close() }
        // The size is checked before a byte is read: this store never writes a file larger than
        // its capacity, so a larger one (replaced by another program, damaged) is not an entry.
        // Within it, each field is read only once what is left of the file can hold it.
        let size = (try? handle.seekToEnd()).map { Int(clamping: $0) } ?? -1
        let decoded = try? { () throws -> (key: String, responses: [CachedResponse])? in
            guard size > 0, size <= capacity else { return nil }
            try handle.seek(toOffset: 0)
            return try CachedResponse.decodeVariants(size: size) { count in try handle.read(upToCount: count) ?? Data() }
        }()
        guard let (storedKey, responses) = decoded ?? nil else {
            // Corrupt, truncated or oversized: never served, and removed so it is not read again.
            remove(fileNamed: name)
            return nil
        }
        guard storedKey == key else { return nil }
        let now = Date()
        index.withLock { $0.files[name]?.lastUse = now }
        try? FileManager.default.setAttributes([.modificationDate: now], ofItemAtPath: url.path)
        return responses
    }

    /// Writes the variants of one URL under `key`, in one file; a file larger than the whole
    /// capacity is not written.
    func write(_ responses: [CachedResponse], key: String) {
        guard let bytes = try? responses.reduce(into: Data(), { $0.append(try $1.encoded()) }), bytes.count <= capacity else { return }
        let name = CachedResponse.fileName(forKey: key)
        let temporary = directory.appendingPathComponent(Self.temporaryPrefix + UUID().uuidString)
        do {
            // Owner-only (0600): entries can hold private responses.
            guard FileManager.default.createFile(atPath: temporary.path, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
            // rename(2) replaces an existing entry atomically: a reader sees the old file or the new one.
            guard rename(temporary.path, directory.appendingPathComponent(name).path) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                return
            }
        } catch {
            // A full or read-only disk: the response is still served; it is just not kept.
            try? FileManager.default.removeItem(at: temporary)
            return
        }
        index.withLock { state in
            state.totalSize -= state.files[name]?.size ?? 0
            state.files[name] = FileRecord(size: bytes.count, lastUse: Date())
            state.totalSize += bytes.count
        }
        evictIfNeeded()
    }

    func remove(key: String) { remove(fileNamed: CachedResponse.fileName(forKey: key)) }

    func removeAll() {
        let names = index.withLock { state -> [String] in
            defer { state = Index() }
            return Array(state.files.keys)
        }
        for name in names { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
    }

    var totalSize: Int { index.withLock { $0.totalSize } }

    private func remove(fileNamed name: String) {
        forget(name)
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
    }

    private func forget(_ name: String) {
        index.withLock { state in
            if let record = state.files.removeValue(forKey: name) { state.totalSize -= record.size }
        }
    }

    /// Removes least recently used files until the total fits the capacity.
    private func evictIfNeeded() {
        let victims = index.withLock { state -> [String] in
            guard state.totalSize > capacity else { return [] }
            var victims: [String] = []
            for (name, record) in state.files.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
                guard state.totalSize > capacity else { break }
                state.files[name] = nil
                state.totalSize -= record.size
                victims.append(name)
            }
            return victims
        }
        for name in victims { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
    }
}

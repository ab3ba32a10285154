import ConveyorLocking
import Foundation

/// The URLs a client resolved for its most used plain paths, so that requests to the same
/// endpoint share one `URL` instead of parsing and holding a copy each.
///
/// A `URL` built per request is about 300 bytes of memory for as long as the request waits in
/// the queue (swift-foundation's URL object, its string and parse results), and parsing and
/// checking it took 2–3 µs per request in `conveyor-bench`'s profile. The cache is
/// direct-mapped: a path hashes to one of ``slotCount`` slots and replaces whatever was there,
/// so it holds at most ``slotCount`` URLs whatever the traffic, and a lookup is one hash and one
/// comparison. Only plain relative paths without a query are kept (a query usually differs
/// from call to call and would only evict the endpoints that repeat); the URLs in it already
/// passed ``HTTPClient/url(for:)``'s checks.
final class ResolvedURLCache: Sendable {
    /// How many URLs the cache holds at most.
    static let slotCount = 64
    /// Longer paths are not kept: hashing them costs more than it saves.
    static let maximumPathLength = 256

    private let slots = Lock<[(path: String, url: URL)?]>(Array(repeating: nil, count: ResolvedURLCache.slotCount))

    /// The URL stored for `path`, if any.
    func url(for path: String) -> URL? {
        guard path.utf8.count <= Self.maximumPathLength else { return nil }
        let index = Self.slot(for: path)
        return slots.withLock { slots in
            guard let slot = slots[index], slot.path == path else { return nil }
            return slot.url
        }
    }

    /// Keeps `url` for `path` when the path is worth keeping (see the type's documentation).
    func store(_ url: URL, for path: String) {
        guard path.utf8.count <= Self.maximumPathLength, !path.utf8.contains(UInt8(ascii: "?")),
            PathResolver.isPlainRelativePath(path)
        else { return }
        let index = Self.slot(for: path)
        slots.withLock { $0[index] = (path, url) }
    }

    private static func slot(for path: String) -> Int {
        // `slotCount` is a power of two: the low bits of the hash pick the slot.
        path.hashValue & (slotCount - 1)
    }
}

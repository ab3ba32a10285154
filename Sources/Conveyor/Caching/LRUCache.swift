import ConveyorLocking
import Foundation

/// A thread-safe least-recently-used cache with cost and count limits and optional expiry.
///
/// `NSCache` is not an option on Linux: it is not LRU there and evicts the entry just
/// inserted. Reads and writes are O(1) (a dictionary plus a doubly linked list threaded through
/// it); when a limit is exceeded the least recently used entries go first.
public final class LRUCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var value: Value
        var cost: Int
        var expires: TimeInterval?
        var newer: Key?
        var older: Key?
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var newest: Key?
        var oldest: Key?
        var totalCost = 0
        var costLimit: Int
        var countLimit: Int

        mutating func unlink(_ key: Key) {
            guard let entry = entries[key] else { return }
            if let newer = entry.newer { entries[newer]?.older = entry.older } else { newest = entry.older }
            if let older = entry.older { entries[older]?.newer = entry.newer } else { oldest = entry.newer }
            entries[key]?.newer = nil
            entries[key]?.older = nil
        }

        mutating func linkAsNewest(_ key: Key) {
            entries[key]?.older = newest
            entries[key]?.newer = nil
            if let newest { entries[newest]?.newer = key }
            newest = key
            if oldest == nil { oldest = key }
        }

        @discardableResult
        mutating func remove(_ key: Key) -> Value? {
            unlink(key)
            guard let entry = entries.removeValue(forKey: key) else { return nil }
            totalCost -= entry.cost
            return entry.value
        }

        mutating func trim(toCost cost: Int, count: Int) {
            while let oldest, totalCost > cost || entries.count > count { remove(oldest) }
        }
    }

    private let state: Lock<State>
    private let defaultTTL: TimeInterval?
    private let clock: @Sendable () -> TimeInterval

    /// Creates a cache.
    /// - Parameters:
    ///   - costLimit: The most total cost kept; default unlimited.
    ///   - countLimit: The most entries kept; default unlimited.
    ///   - ttl: Seconds an entry lives unless its own `ttl` says otherwise; nil (default) for ever.
    ///   - clock: Seconds from a fixed origin; default the monotonic uptime. Tests inject their own.
    public init(
        costLimit: Int = .max, countLimit: Int = .max, ttl: TimeInterval? = nil,
        clock: (@Sendable () -> TimeInterval)? = nil
    ) {
        state = Lock(State(costLimit: costLimit, countLimit: countLimit))
        defaultTTL = ttl
        self.clock = clock ?? { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
    }

    /// The value for `key`, which becomes the most recently used; nil when absent or expired.
    /// - Parameter key: The key.
    /// - Returns: The value, or nil.
    public func value(forKey key: Key) -> Value? {
        let now = clock()
        return state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            if let expires = entry.expires, expires <= now {
                state.remove(key)
                return nil
            }
            state.unlink(key)
            state.linkAsNewest(key)
            return entry.value
        }
    }

    /// Stores `value` as the most recently used entry, then evicts least recently used entries
    /// until both limits hold (possibly `value` itself, if its cost alone exceeds the limit).
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key; an existing entry is replaced.
    ///   - cost: What the entry counts against ``costLimit``; default 0.
    ///   - ttl: Seconds the entry lives; nil uses the cache's default.
    public func setValue(_ value: Value, forKey key: Key, cost: Int = 0, ttl: TimeInterval? = nil) {
        let expires = (ttl ?? defaultTTL).map { clock() + $0 }
        state.withLock { state in
            state.remove(key)
            state.entries[key] = Entry(value: value, cost: max(0, cost), expires: expires)
            state.totalCost += max(0, cost)
            state.linkAsNewest(key)
            state.trim(toCost: state.costLimit, count: state.countLimit)
        }
    }

    /// Removes an entry.
    /// - Parameter key: The key.
    /// - Returns: The removed value, or nil.
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? { state.withLock { $0.remove(key) } }

    /// Removes every entry.
    public func removeAll() {
        state.withLock { state in
            state.entries = [:]
            state.newest = nil
            state.oldest = nil
            state.totalCost = 0
        }
    }

    /// Evicts least recently used entries until the total cost is at most `cost`.
    /// - Parameter cost: The cost to trim to.
    public func trim(toCost cost: Int) {
        state.withLock { $0.trim(toCost: cost, count: .max) }
    }

    /// The total cost of the entries.
    public var totalCost: Int { state.withLock { $0.totalCost } }

    /// The number of entries (expired ones included until they are read or evicted).
    public var count: Int { state.withLock { $0.entries.count } }

    /// The keys from most to least recently used.
    public var keysByRecency: [Key] {
        state.withLock { state in
            var keys: [Key] = []
            var cursor = state.newest
            while let key = cursor {
                keys.append(key)
                cursor = state.entries[key]?.older
            }
            return keys
        }
    }

    /// The most total cost kept; lowering it evicts at once.
    public var costLimit: Int {
        get { state.withLock { $0.costLimit } }
        set {
            state.withLock {
                $0.costLimit = newValue
                $0.trim(toCost: newValue, count: $0.countLimit)
            }
        }
    }

    /// The most entries kept; lowering it evicts at once.
    public var countLimit: Int {
        get { state.withLock { $0.countLimit } }
        set {
            state.withLock {
                $0.countLimit = newValue
                $0.trim(toCost: $0.costLimit, count: newValue)
            }
        }
    }
}

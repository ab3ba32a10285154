import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@Suite("LRU cache and image cache")
struct LRUCacheTests {
    @Test("Least recently used entries go first when the count limit is exceeded; reads refresh recency")
    func countLimit() {
        let cache = LRUCache<String, Int>(countLimit: 3)
        for (index, key) in ["a", "b", "c"].enumerated() { cache.setValue(index, forKey: key) }
        #expect(cache.value(forKey: "a") == 0)
        cache.setValue(3, forKey: "d")
        #expect(cache.value(forKey: "b") == nil)
        #expect(cache.keysByRecency == ["d", "a", "c"])
        cache.countLimit = 1
        #expect(cache.keysByRecency == ["d"])
    }

    @Test("Cost limit: replacing updates the cost; an entry costlier than the limit is not kept")
    func costLimit() {
        let cache = LRUCache<String, String>(costLimit: 10)
        cache.setValue("x", forKey: "a", cost: 4)
        cache.setValue("y", forKey: "b", cost: 4)
        cache.setValue("z", forKey: "a", cost: 2)
        #expect(cache.totalCost == 6 && cache.count == 2)
        cache.setValue("w", forKey: "c", cost: 5)
        #expect(cache.value(forKey: "b") == nil && cache.totalCost == 7)
        cache.setValue("huge", forKey: "d", cost: 11)
        #expect(cache.value(forKey: "d") == nil && cache.totalCost <= 10)
        cache.trim(toCost: 0)
        #expect(cache.count == 0)
    }

    @Test("Entries expire after their TTL on the injected clock")
    func expiry() {
        let now = Lock(0.0)
        let cache = LRUCache<Int, Int>(ttl: 10, clock: { now.withLock { $0 } })
        cache.setValue(1, forKey: 1)
        cache.setValue(2, forKey: 2, ttl: 100)
        now.withLock { $0 = 50 }
        #expect(cache.value(forKey: 1) == nil && cache.value(forKey: 2) == 2)
        #expect(cache.count == 1)
    }

    @Test("Concurrent readers and writers keep the cache consistent")
    func concurrency() async {
        let cache = LRUCache<Int, Int>(costLimit: 500)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    for index in 0..<1000 {
                        let key = (worker * 31 + index) % 200
                        if index % 3 == 0 { cache.removeValue(forKey: key) } else { cache.setValue(index, forKey: key, cost: 3) }
                        _ = cache.value(forKey: (key + 7) % 200)
                    }
                }
            }
        }
        #expect(cache.totalCost == cache.count * 3 && cache.totalCost <= 500)
        #expect(cache.keysByRecency.count == cache.count)
    }

    @Test("The image cache costs width × height × 4 and purges to 60 % when over its limit")
    func imageCache() throws {
        let image = try EncodedImage(data: SampleImages.ico)  // 32 x 32: 4096 bytes decoded
        let cache = ImageCache(costLimit: 4096 * 10, purgedCost: 4096 * 6)
        for index in 0..<10 { cache.setImage(image, for: URL(string: "http://x/\(index).ico")!) }
        #expect(cache.totalCost == 40960 && cache.count == 10)
        _ = cache.image(for: URL(string: "http://x/0.ico")!)
        cache.setImage(image, for: URL(string: "http://x/10.ico")!)
        #expect(cache.count == 6)
        #expect(cache.image(for: URL(string: "http://x/0.ico")!) != nil && cache.image(for: URL(string: "http://x/1.ico")!) == nil)
        cache.setImage(image, for: URL(string: "http://x/10.ico")!, processingIdentifier: "thumb")
        #expect(cache.image(for: URL(string: "http://x/10.ico")!, processingIdentifier: "thumb") != nil)
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0)
    }
}

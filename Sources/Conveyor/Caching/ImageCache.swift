import Foundation

#if canImport(UIKit)
    import UIKit
#endif

/// An in-memory cache of images, keyed by URL (and an optional processing identifier, so a
/// resized copy does not replace the original).
///
/// An image costs its decoded size, width × height × 4 bytes, read from its header. Past
/// ``costLimit`` (default 100 MB) the least recently used images are purged down to
/// ``purgedCost`` (default 60 MB), so the cache does not thrash at the limit. On iOS and tvOS a
/// memory warning empties it.
public final class ImageCache: Sendable {
    /// The cache image downloads use by default.
    public static let shared = ImageCache()

    private let storage: LRUCache<String, EncodedImage>
    /// The cost past which the cache purges.
    public let costLimit: Int
    /// The cost a purge trims down to.
    public let purgedCost: Int

    /// Creates a cache.
    /// - Parameters:
    ///   - costLimit: Decoded bytes past which it purges; default 100 MB.
    ///   - purgedCost: Decoded bytes it purges down to; default 60 MB.
    public init(costLimit: Int = 100_000_000, purgedCost: Int = 60_000_000) {
        self.costLimit = costLimit
        self.purgedCost = min(purgedCost, costLimit)
        storage = LRUCache()
        #if canImport(UIKit) && !os(watchOS)
            // The center keeps the observer (a few bytes) for the process's life; the storage is
            // held weakly, so a cache that is released does not live on in it. The token is not
            // kept: corelibs' `addObserver` is not discardable, Apple's imported one is.
            _ = NotificationCenter.default.addObserver(
                forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: nil
            ) { [weak storage] _ in
                storage?.removeAll()
            }
        #endif
    }

    static func key(_ url: URL, _ processingIdentifier: String?) -> String {
        processingIdentifier.map { "\(url.absoluteString)#\($0)" } ?? url.absoluteString
    }

    /// The cached image, which becomes the most recently used.
    /// - Parameters:
    ///   - url: The image's URL.
    ///   - processingIdentifier: Which processed variant; nil for the original.
    /// - Returns: The image, or nil.
    public func image(for url: URL, processingIdentifier: String? = nil) -> EncodedImage? {
        storage.value(forKey: Self.key(url, processingIdentifier))
    }

    /// Stores an image, purging least recently used ones when over ``costLimit``.
    /// - Parameters:
    ///   - image: The image.
    ///   - url: Its URL.
    ///   - processingIdentifier: Which processed variant; nil for the original.
    public func setImage(_ image: EncodedImage, for url: URL, processingIdentifier: String? = nil) {
        storage.setValue(image, forKey: Self.key(url, processingIdentifier), cost: image.decodedByteCount)
        if storage.totalCost > costLimit { storage.trim(toCost: purgedCost) }
    }

    /// Removes one image.
    /// - Parameters:
    ///   - url: Its URL.
    ///   - processingIdentifier: Which processed variant; nil for the original.
    public func removeImage(for url: URL, processingIdentifier: String? = nil) {
        storage.removeValue(forKey: Self.key(url, processingIdentifier))
    }

    /// Removes every image.
    public func removeAll() { storage.removeAll() }

    /// Decoded bytes of the cached images.
    public var totalCost: Int { storage.totalCost }

    /// Cached images.
    public var count: Int { storage.count }
}

import ConveyorLocking
import Foundation

/// Anything that shows one image at a time — an image view, a cell, a test double — gets
/// ``setImage(with:placeholder:processingIdentifier:downloader:completion:)`` and
/// ``cancelImageRequest()``, the behaviour of AFNetworking's `UIImageView+AFNetworking`:
///
/// - a new call cancels the target's previous request (a reused table cell never shows the
///   old row's image);
/// - a cached image is shown at once, synchronously, and the placeholder is never shown;
/// - on a cache miss the placeholder (when non-nil) is shown until the download finishes;
/// - a finished download is applied only if the target still wants that URL, and is
///   cached either way.
///
/// `image` is set on the downloader's callback queue (`.main` on Apple platforms) or, for a
/// cache hit, on the caller's thread: call these methods from that queue. `UIImageView` and
/// `NSImageView` get the same methods in `ImageDisplaying+Platform.swift`; they set the view's
/// image on the main thread whatever the callback queue (queued there when it is another).
public protocol ImageDisplaying: AnyObject {
    /// The image shown.
    var image: EncodedImage? { get set }
}

extension ImageDisplaying {
    /// Shows the image at `url`: at once when cached, else `placeholder` until it is downloaded.
    /// - Parameters:
    ///   - url: The image's URL.
    ///   - placeholder: Shown during a download; nil leaves the current image.
    ///   - processingIdentifier: Which processed variant, as in ``ImageDownloader``; nil for the original.
    ///   - downloader: Default ``ImageDownloader/shared``.
    ///   - completion: Called after the image was applied, or with the error (cancellation
    ///     by a newer call included); nil for none.
    public func setImage(
        with url: URL, placeholder: EncodedImage? = nil, processingIdentifier: String? = nil,
        downloader: ImageDownloader = .shared, completion: ImageDownloader.Completion? = nil
    ) {
        cancelImageRequest()
        if let cached = downloader.imageCache?.image(for: url, processingIdentifier: processingIdentifier) {
            image = cached
            completion?(.success(cached))
            return
        }
        if let placeholder { image = placeholder }
        let token = ImageRequestRegistry.shared.begin(for: self, url: url)
        // The weak reference is handed to the completion and not used here after; the target
        // itself is only touched on the callback queue, as documented. Held weakly so a pending
        // download does not keep it alive.
        let target = OneWayTransfer(WeakTarget(self))
        let receipt = downloader.download(url, processingIdentifier: processingIdentifier) { result in
            let displaying = target.value.object
            let current = displaying.map { ImageRequestRegistry.shared.finish(for: $0, token: token) } ?? false
            if current, case .success(let image) = result { displaying?.image = image }
            // A target that moved on to another URL hears only of its own cancellation.
            if current || (try? result.get()) == nil { completion?(result) }
        }
        if let receipt { ImageRequestRegistry.shared.attach(receipt, downloader: downloader, for: self, token: token) }
    }

    /// Cancels the target's pending download, if any (its completion gets
    /// ``ConveyorError/cancelled(reason:)``); the current image stays.
    public func cancelImageRequest() {
        ImageRequestRegistry.shared.cancel(for: self)
    }

    /// The URL the target is waiting for; nil when none is pending.
    public var pendingImageURL: URL? { ImageRequestRegistry.shared.pendingURL(for: self) }
}

/// A weak reference to a display target.
struct WeakTarget {
    weak var object: (any ImageDisplaying)?
    init(_ object: any ImageDisplaying) { self.object = object }
}

/// Which request each display target waits for (Swift on Linux has no associated objects,
/// so the binding lives here, keyed by object identity and checked against a weak reference).
final class ImageRequestRegistry: Sendable {
    static let shared = ImageRequestRegistry()

    private struct Binding {
        /// Read only inside `bindings`' lock.
        var target: LockedReference<WeakTarget>
        var url: URL
        var token: UUID
        var receipt: ImageDownloader.Receipt?
        var downloader: ImageDownloader?
    }

    private let bindings = Lock<[ObjectIdentifier: Binding]>([:])

    func begin(for target: any ImageDisplaying, url: URL) -> UUID {
        let token = UUID()
        bindings.withLock { bindings in
            // Forget targets that are gone, so their identifiers can be reused safely.
            bindings = bindings.filter { $0.value.target.value.object != nil }
            bindings[ObjectIdentifier(target)] = Binding(target: LockedReference(WeakTarget(target)), url: url, token: token)
        }
        return token
    }

    func attach(_ receipt: ImageDownloader.Receipt, downloader: ImageDownloader, for target: any ImageDisplaying, token: UUID) {
        bindings.withLock { bindings in
            guard bindings[ObjectIdentifier(target)]?.token == token else { return }
            bindings[ObjectIdentifier(target)]?.receipt = receipt
            bindings[ObjectIdentifier(target)]?.downloader = downloader
        }
    }

    /// Whether `token` is still the target's current request; if so the binding ends.
    func finish(for target: any ImageDisplaying, token: UUID) -> Bool {
        bindings.withLock { bindings in
            guard bindings[ObjectIdentifier(target)]?.token == token else { return false }
            bindings[ObjectIdentifier(target)] = nil
            return true
        }
    }

    func cancel(for target: any ImageDisplaying) {
        let binding = bindings.withLock { $0.removeValue(forKey: ObjectIdentifier(target)) }
        if let binding, let receipt = binding.receipt { binding.downloader?.cancel(receipt) }
    }

    func pendingURL(for target: any ImageDisplaying) -> URL? {
        bindings.withLock { $0[ObjectIdentifier(target)]?.url }
    }
}

import Foundation

#if canImport(UIKit) && !os(watchOS)
    import UIKit
    import ObjectiveC
#elseif canImport(AppKit)
    import AppKit
    import ObjectiveC
#endif

#if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
    /// Runs `body` on the main thread, where an image view may be touched: at once when the caller
    /// is already there (a cache hit from a main-actor caller, or the downloader's default `.main`
    /// callback queue), else queued on the main queue (a callback queue configured to be another).
    ///
    /// The image views' adapters below are not main-actor-isolated (``ImageDisplaying`` is not, and
    /// the downloader calls `image`'s setter on whichever callback queue it was given), so they
    /// reach the view only through here.
    private func performOnMainThread(_ body: @escaping @MainActor @Sendable () -> Void) {
        if Thread.isMainThread {
            MainActor.assumeIsolated(body)
        } else {
            DispatchQueue.main.async { MainActor.assumeIsolated(body) }
        }
    }
#endif

#if canImport(UIKit) && !os(watchOS)
    /// The platform's image view.
    typealias PlatformImageView = UIImageView
#elseif canImport(AppKit)
    typealias PlatformImageView = NSImageView
#endif

#if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
    /// Shows downloaded images in an image view through ``ImageDisplaying``, converting to the
    /// platform's image type; kept alive by the view (an associated object). Not
    /// main-actor-isolated (a nested type would not inherit the view's isolation either): its
    /// setter may run on any callback queue, and sets the view's image on the main thread.
    private final class ImageViewAdapter: ImageDisplaying {
        weak var view: PlatformImageView?
        var image: EncodedImage? {
            get { nil }
            set {
                let view = self.view
                performOnMainThread { view?.image = newValue?.platformImage }
            }
        }
        init(_ view: PlatformImageView) { self.view = view }

        nonisolated(unsafe) private static var key: UInt8 = 0

        /// The view's adapter, made on first use.
        static func of(_ view: PlatformImageView) -> ImageViewAdapter {
            if let adapter = objc_getAssociatedObject(view, &key) as? ImageViewAdapter { return adapter }
            let adapter = ImageViewAdapter(view)
            objc_setAssociatedObject(view, &key, adapter, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
            return adapter
        }
    }
#endif

#if canImport(UIKit) && !os(watchOS)
    /// `UIImageView` shows downloaded images through an ``ImageDisplaying`` adapter that converts
    /// to `UIImage`; the adapter is kept alive by the view (an associated object).
    extension UIImageView {
        /// Shows the image at `url` (see ``ImageDisplaying/setImage(with:placeholder:processingIdentifier:downloader:completion:)``).
        /// - Parameters:
        ///   - url: The image's URL.
        ///   - placeholder: Shown on a cache miss until the download finishes; nil leaves the current image.
        ///   - downloader: Default ``ImageDownloader/shared``.
        ///   - completion: Called after the image was applied, or with the error.
        public func setImage(
            with url: URL, placeholder: UIImage? = nil, downloader: ImageDownloader = .shared,
            completion: ImageDownloader.Completion? = nil
        ) {
            if placeholder != nil, downloader.imageCache?.image(for: url) == nil { image = placeholder }
            ImageViewAdapter.of(self).setImage(with: url, placeholder: nil, downloader: downloader, completion: completion)
        }

        /// Cancels the view's pending image download.
        public func cancelImageRequest() { ImageViewAdapter.of(self).cancelImageRequest() }
    }
#elseif canImport(AppKit)
    /// `NSImageView` shows downloaded images through an ``ImageDisplaying`` adapter that converts
    /// to `NSImage`; the adapter is kept alive by the view (an associated object).
    extension NSImageView {
        /// Shows the image at `url` (see ``ImageDisplaying/setImage(with:placeholder:processingIdentifier:downloader:completion:)``).
        /// - Parameters:
        ///   - url: The image's URL.
        ///   - placeholder: Shown on a cache miss until the download finishes; nil leaves the current image.
        ///   - downloader: Default ``ImageDownloader/shared``.
        ///   - completion: Called after the image was applied, or with the error.
        public func setImage(
            with url: URL, placeholder: NSImage? = nil, downloader: ImageDownloader = .shared,
            completion: ImageDownloader.Completion? = nil
        ) {
            if placeholder != nil, downloader.imageCache?.image(for: url) == nil { image = placeholder }
            ImageViewAdapter.of(self).setImage(with: url, placeholder: nil, downloader: downloader, completion: completion)
        }

        /// Cancels the view's pending image download.
        public func cancelImageRequest() { ImageViewAdapter.of(self).cancelImageRequest() }
    }
#endif

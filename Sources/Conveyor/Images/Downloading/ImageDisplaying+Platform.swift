#if canImport(UIKit) && !os(watchOS)
    import UIKit
    import ObjectiveC

    /// `UIImageView` shows downloaded images through an ``ImageDisplaying`` adapter that converts
    /// to `UIImage`; the adapter is kept alive by the view (an associated object).
    extension UIImageView {
        private final class Adapter: ImageDisplaying {
            weak var view: UIImageView?
            var image: Image? {
                get { nil }
                set { view?.image = newValue?.platformImage }
            }
            init(_ view: UIImageView) { self.view = view }
        }

        nonisolated(unsafe) private static var adapterKey: UInt8 = 0

        private var conveyorAdapter: Adapter {
            if let adapter = objc_getAssociatedObject(self, &Self.adapterKey) as? Adapter { return adapter }
            let adapter = Adapter(self)
            objc_setAssociatedObject(self, &Self.adapterKey, adapter, .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
            return adapter
        }

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
            let adapter = conveyorAdapter
            if placeholder != nil, downloader.imageCache?.image(for: url) == nil { image = placeholder }
            adapter.setImage(with: url, placeholder: nil, downloader: downloader, completion: completion)
        }

        /// Cancels the view's pending image download.
        public func cancelImageRequest() { conveyorAdapter.cancelImageRequest() }
    }
#endif

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Downloads images on its own operation queue, caches them in an ``ImageCache``, and runs
/// one download per URL however many callers ask for it at once (the engine behind
/// ``ImageDisplaying/setImage(with:placeholder:processingIdentifier:downloader:completion:)``
/// and AFNetworking's `UIImageView+AFNetworking`).
///
/// A cached image completes synchronously, on the caller's thread, before
/// ``download(_:processingIdentifier:processing:completion:)`` returns. Otherwise the
/// completion runs on ``callbackQueue``.
public final class ImageDownloader: Sendable {
    /// What a download ends with.
    public typealias Completion = @Sendable (Result<EncodedImage, ConveyorError>) -> Void

    /// Identifies one caller's interest in a download, to cancel it.
    public struct Receipt: Sendable, Hashable {
        /// The image's URL.
        public let url: URL
        let id: UUID
        let key: String
    }

    /// The downloader ``ImageDisplaying`` uses by default: ``ImageCache/shared``, the
    /// ``HTTPCache/shared`` HTTP cache, 4 downloads at once.
    public static let shared = ImageDownloader()

    /// Where downloads run.
    public var operationQueue: OperationQueue { operationQueueReference.value }
    /// A `LockedReference` that needs no lock (never replaced; `OperationQueue` synchronizes
    /// itself), so that sendability does not rest on the SDK marking `OperationQueue` `Sendable`.
    private let operationQueueReference: LockedReference<OperationQueue>
    /// Where finished images are kept; nil keeps none.
    public let imageCache: ImageCache?
    /// The HTTP cache downloads go through; nil for none.
    public let httpCache: HTTPCache?
    /// Where completions run (except the synchronous cache hits).
    public let callbackQueue: DispatchQueue
    /// Seconds without a byte before a download fails.
    public let idleTimeout: TimeInterval

    private struct Pending {
        var operation: ImageRequestOperation
        var waiters: [UUID: Completion]
    }

    private let pending = Lock<[String: Pending]>([:])

    /// Creates a downloader.
    /// - Parameters:
    ///   - imageCache: Where images are kept; default ``ImageCache/shared``.
    ///   - httpCache: The HTTP cache downloads use; default ``HTTPCache/shared``.
    ///   - maximumConcurrentDownloads: Downloads at once; default 4.
    ///   - callbackQueue: Where completions run; default `DispatchQueue.conveyorDefaultCallbackQueue`
    ///     (`.main` on Apple platforms).
    ///   - idleTimeout: Idle timeout in seconds; default 30.
    public init(
        imageCache: ImageCache? = .shared, httpCache: HTTPCache? = .shared, maximumConcurrentDownloads: Int = 4,
        callbackQueue: DispatchQueue = .conveyorDefaultCallbackQueue, idleTimeout: TimeInterval = 30
    ) {
        self.imageCache = imageCache
        self.httpCache = httpCache
        self.callbackQueue = callbackQueue
        self.idleTimeout = idleTimeout
        let operationQueue = OperationQueue()
        operationQueue.name = "Conveyor.ImageDownloader"
        operationQueue.maxConcurrentOperationCount = max(1, maximumConcurrentDownloads)
        operationQueueReference = LockedReference(operationQueue)
    }

    /// Downloads the image at `url`, or takes it from ``imageCache``.
    /// - Parameters:
    ///   - url: The image's URL.
    ///   - processingIdentifier: Names the result of `processing` in the cache (a resized
    ///     copy must not replace the original); nil when there is no processing.
    ///   - processing: Runs off the callback queue on the downloaded image; nil for none.
    ///   - completion: Gets the image or the error; exactly once per call.
    /// - Returns: A receipt to cancel with; nil when the image was cached and `completion`
    ///   has already run.
    @discardableResult
    public func download(
        _ url: URL, processingIdentifier: String? = nil, processing: ImageRequestOperation.Processing? = nil,
        completion: @escaping Completion
    ) -> Receipt? {
        if let image = imageCache?.image(for: url, processingIdentifier: processingIdentifier) {
            completion(.success(image))
            return nil
        }
        let key = ImageCache.key(url, processingIdentifier)
        let receipt = Receipt(url: url, id: UUID(), key: key)
        let operationToStart = pending.withLock { pending -> ImageRequestOperation? in
            if pending[key] != nil {
                pending[key]!.waiters[receipt.id] = completion
                return nil
            }
            let operation = makeOperation(url: url, key: key, processingIdentifier: processingIdentifier, processing: processing)
            pending[key] = Pending(operation: operation, waiters: [receipt.id: completion])
            return operation
        }
        if let operationToStart { operationQueue.addOperation(operationToStart) }
        return receipt
    }

    /// Withdraws one caller: its completion runs with ``ConveyorError/cancelled(reason:)``;
    /// the download itself stops when no caller is left.
    /// - Parameter receipt: What ``download(_:processingIdentifier:processing:completion:)`` returned.
    public func cancel(_ receipt: Receipt) {
        let (completion, orphaned) = pending.withLock { pending -> (Completion?, ImageRequestOperation?) in
            guard let completion = pending[receipt.key]?.waiters.removeValue(forKey: receipt.id) else { return (nil, nil) }
            guard pending[receipt.key]?.waiters.isEmpty == true else { return (completion, nil) }
            return (completion, pending.removeValue(forKey: receipt.key)?.operation)
        }
        orphaned?.cancel()
        if let completion { callbackQueue.async { completion(.failure(.cancelled(reason: .explicit))) } }
    }

    /// Downloads in flight (after deduplication).
    public var activeDownloadCount: Int { pending.withLock { $0.count } }

    private func makeOperation(
        url: URL, key: String, processingIdentifier: String?, processing: ImageRequestOperation.Processing?
    ) -> ImageRequestOperation {
        var request = URLRequest(url: url, timeoutInterval: idleTimeout)
        request.setHeader("image/*", for: "Accept")
        let operation = ImageRequestOperation(request: request, processing: processing)
        operation.cache = httpCache
        operation.setCompletionBlock(
            success: { [weak self] _, value in
                guard let self, let image = value as? EncodedImage else { return }
                imageCache?.setImage(image, for: url, processingIdentifier: processingIdentifier)
                finish(key: key, operation: operation, result: .success(image))
            },
            failure: { [weak self] _, error in
                self?.finish(key: key, operation: operation, result: .failure(error))
            })
        return operation
    }

    private func finish(key: String, operation: ImageRequestOperation, result: Result<EncodedImage, ConveyorError>) {
        let waiters = pending.withLock { pending -> [Completion] in
            // A cancelled download's key may already belong to a newer one.
            guard pending[key]?.operation === operation else { return [] }
            return pending.removeValue(forKey: key).map { Array($0.waiters.values) } ?? []
        }
        for waiter in waiters { callbackQueue.async { waiter(result) } }
    }
}

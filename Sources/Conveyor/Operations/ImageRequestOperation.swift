import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An operation whose response is an image (AFNetworking's `AFImageRequestOperation`), with an
/// optional processing step that runs off the callback queue.
open class ImageRequestOperation: HTTPRequestOperation, @unchecked Sendable {
    // @unchecked Sendable: adds no stored state; the processing block lives in the serializer,
    // which the base class keeps behind its Mutex.

    /// Turns the downloaded image into the one delivered (resize, decode, filter).
    public typealias Processing = @Sendable (EncodedImage) throws -> EncodedImage

    /// Creates the operation with an ``ImageResponseSerializer``.
    /// - Parameter request: The request.
    public required init(request: URLRequest) {
        super.init(request: request)
        responseSerializer = ImageResponseSerializer()
    }

    /// Creates the operation with a processing block.
    /// - Parameters:
    ///   - request: The request.
    ///   - processing: Runs on the processing queue before the success block; nil for none.
    public convenience init(request: URLRequest, processing: Processing?) {
        self.init(request: request)
        if let processing { responseSerializer = ProcessingImageSerializer(processing: processing) }
    }

    /// `image/*`.
    open override class var processableContentTypes: Set<String> { ["image/*"] }
    /// The extensions of the formats ``EncodedImage`` recognises.
    open override class var processablePathExtensions: Set<String> {
        ["png", "jpg", "jpeg", "jpe", "gif", "webp", "bmp", "tif", "tiff", "ico", "cur"]
    }

    /// The (processed) image; nil until the operation succeeded.
    public var responseImage: EncodedImage? { responseObject as? EncodedImage }
}

/// An ``ImageResponseSerializer`` followed by a processing block.
struct ProcessingImageSerializer: ResponseSerializer {
    let base = ImageResponseSerializer()
    let processing: ImageRequestOperation.Processing

    var acceptableContentTypes: Set<String>? { base.acceptableContentTypes }

    func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> EncodedImage {
        try processing(try base.serialize(request: request, response: response, data: data))
    }
}

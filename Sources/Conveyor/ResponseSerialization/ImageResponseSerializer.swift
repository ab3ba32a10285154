import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Recognises the body as an ``EncodedImage`` (format and pixel size from the header).
///
/// A body that is no recognised image, or an image of another format than a specific
/// `Content-Type` claims (`image/png` carrying JPEG bytes), is an error.
public struct ImageResponseSerializer: ResponseSerializer {
    /// The MIME types accepted. Default `image/*`.
    public let acceptableContentTypes: Set<String>?

    /// Creates the serializer.
    /// - Parameter acceptableContentTypes: Accepted MIME types; default `image/*`.
    public init(acceptableContentTypes: Set<String>? = ["image/*"]) {
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// Recognises `data`.
    /// - Throws: ``ResponseSerializationError/notAnImage(claimed:detected:)``.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> EncodedImage {
        let claimed = response.mimeType
        let image: EncodedImage
        do { image = try EncodedImage(data: data) } catch { throw ResponseSerializationError.notAnImage(claimed: claimed, detected: nil) }
        if let claimed, let claimedFormat = EncodedImage.Format(mimeType: claimed), claimedFormat != image.format {
            throw ResponseSerializationError.notAnImage(claimed: claimed, detected: image.format.rawValue)
        }
        return image
    }
}

extension ResponseSerializer where Self == ImageResponseSerializer {
    /// An ``EncodedImage`` recognised from the body.
    public static var image: ImageResponseSerializer { ImageResponseSerializer() }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Parses an XML or binary property list with `PropertyListSerialization`.
public struct PropertyListResponseSerializer: ResponseSerializer {
    /// `application/x-plist` and `application/x-bplist`.
    public static let defaultContentTypes: Set<String> = ["application/x-plist", "application/x-bplist", "application/plist"]

    /// The MIME types accepted. Default ``defaultContentTypes``.
    public let acceptableContentTypes: Set<String>?

    /// Creates the serializer.
    /// - Parameter acceptableContentTypes: Accepted MIME types; default ``defaultContentTypes``.
    public init(acceptableContentTypes: Set<String>? = PropertyListResponseSerializer.defaultContentTypes) {
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// Parses `data` (XML or binary, detected from the bytes).
    /// - Throws: `PropertyListSerialization`'s error.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> Any {
        try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
    }
}

extension ResponseSerializer where Self == PropertyListResponseSerializer {
    /// A property list, XML or binary.
    public static var propertyList: PropertyListResponseSerializer { PropertyListResponseSerializer() }
}

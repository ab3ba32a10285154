import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Parses the body with `JSONSerialization` into `[String: Any]`, `[Any]` or a fragment.
public struct JSONResponseSerializer: ResponseSerializer {
    /// `application/json`, `text/json`, `text/javascript` and any `+json` type.
    public static let defaultContentTypes: Set<String> = ["application/json", "text/json", "text/javascript", "+json"]

    /// The reading options. Default `.fragmentsAllowed`.
    public let readingOptions: JSONSerialization.ReadingOptions
    /// Whether `null` values are removed from dictionaries, recursively. Default false.
    public let removesKeysWithNullValues: Bool
    /// The MIME types accepted. Default ``defaultContentTypes``.
    public let acceptableContentTypes: Set<String>?

    /// Creates the serializer.
    /// - Parameters:
    ///   - readingOptions: Options for `JSONSerialization`; default `.fragmentsAllowed`.
    ///   - removesKeysWithNullValues: Drop `null` dictionary values; default false.
    ///   - acceptableContentTypes: Accepted MIME types; default ``defaultContentTypes``.
    public init(
        readingOptions: JSONSerialization.ReadingOptions = .fragmentsAllowed, removesKeysWithNullValues: Bool = false,
        acceptableContentTypes: Set<String>? = JSONResponseSerializer.defaultContentTypes
    ) {
        self.readingOptions = readingOptions
        self.removesKeysWithNullValues = removesKeysWithNullValues
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// `NSNull()`, as JSON's own `null`.
    public func emptyResponseValue(request: URLRequest, response: HTTPResponseHead) throws -> Any { NSNull() }

    /// Parses `data`; a body of only whitespace counts as empty and gives `NSNull()`.
    /// - Throws: `JSONSerialization`'s error for invalid or truncated JSON.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> Any {
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return NSNull() }
        let object = try JSONSerialization.jsonObject(with: data, options: readingOptions)
        return removesKeysWithNullValues ? Self.removingNulls(object) : object
    }

    static func removingNulls(_ object: Any) -> Any {
        if let dictionary = object as? [String: Any] {
            return dictionary.filter { !($0.value is NSNull) }.mapValues(removingNulls)
        }
        if let array = object as? [Any] { return array.map(removingNulls) }
        return object
    }
}

extension ResponseSerializer where Self == JSONResponseSerializer {
    /// JSON through `JSONSerialization`, accepting the JSON content types.
    public static var json: JSONResponseSerializer { JSONResponseSerializer() }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Anything that decodes a `Decodable` value from bytes: `JSONDecoder`, `PropertyListDecoder`,
/// or a decoder of your own (MessagePack, CBOR…).
public protocol DataDecoder: Sendable {
    /// Decodes a value of `type` from `data`.
    /// - Parameters:
    ///   - type: The type.
    ///   - data: The bytes.
    /// - Returns: The value.
    /// - Throws: The decoder's error.
    func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value
}

extension JSONDecoder: DataDecoder {}
extension PropertyListDecoder: DataDecoder {}

/// A type that stands for "no content", produced for 204/205/HEAD responses by
/// ``DecodableResponseSerializer`` instead of an error.
public protocol EmptyResponse {
    /// The empty value.
    static func emptyValue() -> Self
}

/// The empty body, for endpoints that answer 204 No Content: `client.get("ping", as: Empty.self)`.
public struct Empty: Codable, Sendable, Equatable, EmptyResponse {
    /// The value.
    public static let value = Empty()
    /// Returns ``value``.
    public static func emptyValue() -> Empty { value }
}

/// Decodes the body into a `Decodable` value with a ``DataDecoder`` (JSON by default).
public struct DecodableResponseSerializer<Value: Decodable>: ResponseSerializer {
    /// The decoder used.
    public let decoder: any DataDecoder
    /// The MIME types accepted; default the JSON types (nil when a non-JSON decoder is given).
    public let acceptableContentTypes: Set<String>?

    /// Creates the serializer.
    /// - Parameters:
    ///   - decoder: The decoder; default a plain `JSONDecoder()`.
    ///   - acceptableContentTypes: Override the accepted MIME types; default the JSON types for
    ///     a `JSONDecoder`, any type otherwise.
    public init(decoder: any DataDecoder = JSONDecoder(), acceptableContentTypes: Set<String>? = nil) {
        self.decoder = decoder
        self.acceptableContentTypes = acceptableContentTypes ?? (decoder is JSONDecoder ? JSONResponseSerializer.defaultContentTypes : nil)
    }

    /// ``Empty`` (or any ``EmptyResponse`` type) for body-less responses; an error otherwise.
    public func emptyResponseValue(request: URLRequest, response: HTTPResponseHead) throws -> Value {
        guard let empty = Value.self as? any EmptyResponse.Type else {
            throw ResponseSerializationError.emptyBody(status: response.statusCode)
        }
        return empty.emptyValue() as! Value
    }

    /// Decodes `data` as `Value`.
    /// - Throws: The decoder's `DecodingError`.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> Value {
        try decoder.decode(Value.self, from: data)
    }
}

extension ResponseSerializer {
    /// Decodes the body into `type`.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder; default a plain `JSONDecoder()`.
    /// - Returns: The serializer.
    public static func decodable<Value: Decodable>(
        _ type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) -> DecodableResponseSerializer<Value> where Self == DecodableResponseSerializer<Value> {
        DecodableResponseSerializer(decoder: decoder)
    }
}

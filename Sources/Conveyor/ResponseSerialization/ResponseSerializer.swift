import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns a validated response body into a value.
///
/// Operations validate status code and content type first (``HTTPRequestOperation/acceptableStatusCodes``,
/// ``HTTPRequestOperation/acceptableContentTypes``), then call the serializer off the callback
/// queue. Presets: ``DataResponseSerializer/data``, ``DecodableResponseSerializer/decodable(_:decoder:)``.
public protocol ResponseSerializer: Sendable {
    /// The value produced.
    associatedtype Output

    /// Produces the value for a response.
    /// - Parameters:
    ///   - request: The request that was sent last (after redirects).
    ///   - response: The response head.
    ///   - data: The body; empty when the server sent none.
    /// - Returns: The value.
    /// - Throws: Any error; the operation wraps it in ``ConveyorError/responseSerializationFailed(underlying:response:data:)``.
    func serialize(request: URLRequest, response: HTTPURLResponse, data: Data) throws -> Output
}

/// Passes the body through unchanged.
public struct DataResponseSerializer: ResponseSerializer {
    /// Creates the serializer.
    public init() {}

    /// Returns `data` itself.
    public func serialize(request: URLRequest, response: HTTPURLResponse, data: Data) throws -> Data { data }
}

extension ResponseSerializer where Self == DataResponseSerializer {
    /// The body's bytes, unchanged. The default of ``HTTPRequestOperation``.
    public static var data: DataResponseSerializer { DataResponseSerializer() }
}

/// Decodes the body into a `Decodable` value with a `JSONDecoder`.
public struct DecodableResponseSerializer<Value: Decodable>: ResponseSerializer {
    /// The decoder used.
    public let decoder: JSONDecoder

    /// Creates the serializer.
    /// - Parameter decoder: The decoder; default a plain `JSONDecoder()`.
    public init(decoder: JSONDecoder = JSONDecoder()) { self.decoder = decoder }

    /// Decodes `data` as `Value`.
    /// - Throws: The decoder's `DecodingError`.
    public func serialize(request: URLRequest, response: HTTPURLResponse, data: Data) throws -> Value {
        try decoder.decode(Value.self, from: data)
    }
}

extension ResponseSerializer {
    /// Decodes the body as JSON into `type`.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder; default a plain `JSONDecoder()`.
    /// - Returns: The serializer.
    public static func decodable<Value: Decodable>(
        _ type: Value.Type, decoder: JSONDecoder = JSONDecoder()
    ) -> DecodableResponseSerializer<Value> where Self == DecodableResponseSerializer<Value> {
        DecodableResponseSerializer(decoder: decoder)
    }
}

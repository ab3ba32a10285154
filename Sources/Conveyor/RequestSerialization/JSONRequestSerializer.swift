import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Encodes parameters as a JSON body (`application/json; charset=utf-8`); for `GET`, `HEAD` and
/// `DELETE`, which have no body, into the query string as the form serializer does.
public struct JSONRequestSerializer: RequestSerializer {
    /// Whether object keys are written in sorted order (stable output for signatures and
    /// caches). Default false.
    public var sortsKeys: Bool
    /// Encodes `Encodable` parameters. Default a plain `JSONEncoder()`; `sortsKeys` is applied to it.
    public var encoder: JSONEncoder
    /// The methods whose parameters go into the URL. Default `GET`, `HEAD`, `DELETE`.
    public var methodsEncodingParametersInURI: Set<HTTPMethod>

    /// Creates a serializer.
    /// - Parameters:
    ///   - sortsKeys: Write keys sorted; default false (compact, unsorted).
    ///   - encoder: The encoder for `Encodable` values; default `JSONEncoder()`.
    ///   - methodsEncodingParametersInURI: Methods whose parameters go into the URL; default GET, HEAD, DELETE.
    public init(
        sortsKeys: Bool = false, encoder: JSONEncoder = JSONEncoder(),
        methodsEncodingParametersInURI: Set<HTTPMethod> = [.get, .head, .delete]
    ) {
        self.sortsKeys = sortsKeys
        self.encoder = encoder
        self.methodsEncodingParametersInURI = methodsEncodingParametersInURI
    }

    /// Encodes `parameters` as a compact JSON object body, or into the query.
    /// - Parameters:
    ///   - request: The request.
    ///   - parameters: The parameters; nil adds nothing.
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)`` for NaN, infinities and
    ///   values JSON cannot represent, before anything is sent.
    public func serialize(_ request: URLRequest, parameters: Parameters?) throws -> URLRequest {
        guard let parameters else { return request }
        if let query = try request.queryEncoded(parameters, methods: methodsEncodingParametersInURI) { return query }
        let object = try SerializableValue.convert(parameters, for: .json)
        var options: JSONSerialization.WritingOptions = [.withoutEscapingSlashes]
        if sortsKeys { options.insert(.sortedKeys) }
        do {
            return request.withBody(try JSONSerialization.data(withJSONObject: object, options: options), contentType: Self.contentType)
        } catch {
            throw ConveyorError.parameterEncodingFailed(reason: .encoderFailed(error))
        }
    }

    /// Encodes `encodable` with ``encoder`` as the body, or into the query for GET/HEAD/DELETE.
    /// - Parameters:
    ///   - request: The request.
    ///   - encodable: The value.
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)`` wrapping the `EncodingError`.
    public func serialize<Value: Encodable>(_ request: URLRequest, encodable: Value) throws -> URLRequest {
        if request.methodIsIn(methodsEncodingParametersInURI) {
            return try serialize(request, parameters: SerializableValue.parameters(from: encodable, encoder: encoder))
        }
        do {
            return request.withBody(try effectiveEncoder().encode(encodable), contentType: Self.contentType)
        } catch {
            throw ConveyorError.parameterEncodingFailed(reason: .encoderFailed(error))
        }
    }

    /// ``encoder``, or a copy of it with sorted keys: the caller's encoder is a shared
    /// reference and is never mutated here.
    private func effectiveEncoder() -> JSONEncoder {
        guard sortsKeys, !encoder.outputFormatting.contains(.sortedKeys) else { return encoder }
        let copy = JSONEncoder()
        copy.outputFormatting = encoder.outputFormatting.union(.sortedKeys)
        copy.dateEncodingStrategy = encoder.dateEncodingStrategy
        copy.dataEncodingStrategy = encoder.dataEncodingStrategy
        copy.keyEncodingStrategy = encoder.keyEncodingStrategy
        copy.nonConformingFloatEncodingStrategy = encoder.nonConformingFloatEncodingStrategy
        copy.userInfo = encoder.userInfo
        return copy
    }

    static let contentType = "application/json; charset=utf-8"
}

extension RequestSerializer where Self == JSONRequestSerializer {
    /// A compact JSON body (`application/json; charset=utf-8`); the query for GET/HEAD/DELETE.
    public static var json: JSONRequestSerializer { JSONRequestSerializer() }
}

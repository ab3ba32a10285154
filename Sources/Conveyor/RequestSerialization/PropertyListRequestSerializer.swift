import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Encodes parameters as a property list body (`application/x-plist; charset=utf-8`), XML or
/// binary; for `GET`, `HEAD` and `DELETE` into the query string.
public struct PropertyListRequestSerializer: RequestSerializer {
    /// The property list format. Default `.xml`.
    public var format: PropertyListSerialization.PropertyListFormat
    /// The methods whose parameters go into the URL. Default `GET`, `HEAD`, `DELETE`.
    public var methodsEncodingParametersInURI: Set<HTTPMethod>

    /// Creates a serializer.
    /// - Parameters:
    ///   - format: `.xml` (default) or `.binary`.
    ///   - methodsEncodingParametersInURI: Methods whose parameters go into the URL; default GET, HEAD, DELETE.
    public init(
        format: PropertyListSerialization.PropertyListFormat = .xml,
        methodsEncodingParametersInURI: Set<HTTPMethod> = [.get, .head, .delete]
    ) {
        self.format = format
        self.methodsEncodingParametersInURI = methodsEncodingParametersInURI
    }

    /// Encodes `parameters` as a property list dictionary body, or into the query.
    /// - Parameters:
    ///   - request: The request.
    ///   - parameters: The parameters; nil adds nothing.
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)`` for nil/NSNull (property
    ///   lists have no null) and other values they cannot hold.
    public func serialize(_ request: URLRequest, parameters: Parameters?) throws -> URLRequest {
        guard let parameters else { return request }
        if let query = try request.queryEncoded(parameters, methods: methodsEncodingParametersInURI) { return query }
        let object = try SerializableValue.convert(parameters, for: .propertyList)
        do {
            return request.withBody(
                try PropertyListSerialization.data(fromPropertyList: object, format: format, options: 0), contentType: Self.contentType)
        } catch {
            throw ConveyorError.parameterEncodingFailed(reason: .encoderFailed(error))
        }
    }

    /// Encodes `encodable` with a `PropertyListEncoder` in ``format``.
    /// - Parameters:
    ///   - request: The request.
    ///   - encodable: The value.
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)`` wrapping the `EncodingError`.
    public func serialize<Value: Encodable>(_ request: URLRequest, encodable: Value) throws -> URLRequest {
        if request.methodIsIn(methodsEncodingParametersInURI) {
            return try serialize(request, parameters: SerializableValue.parameters(from: encodable, encoder: JSONEncoder()))
        }
        let encoder = PropertyListEncoder()
        encoder.outputFormat = format
        do {
            return request.withBody(try encoder.encode(encodable), contentType: Self.contentType)
        } catch {
            throw ConveyorError.parameterEncodingFailed(reason: .encoderFailed(error))
        }
    }

    static let contentType = "application/x-plist; charset=utf-8"
}

extension RequestSerializer where Self == PropertyListRequestSerializer {
    /// An XML property list body (`application/x-plist; charset=utf-8`).
    public static var propertyList: PropertyListRequestSerializer { PropertyListRequestSerializer() }
}

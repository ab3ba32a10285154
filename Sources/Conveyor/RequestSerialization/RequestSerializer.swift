import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Request parameters: string keys with nested values (strings, numbers, booleans, `nil` or
/// `NSNull`, arrays, sets and dictionaries of the same; `Date`, `Data`, `URL`, `UUID` where the
/// format has a spelling for them).
///
/// `Any` rather than `any Sendable` on purpose: a mixed literal such as `["ids": [1, "two"]]`
/// infers `[Any]`, which is not `Sendable`, and would not compile. Parameters are encoded into
/// the request synchronously, before any hop between threads, so nothing shared escapes.
public typealias Parameters = [String: Any]

/// Parameters a caller can capture in a `@Sendable` closure — to send the same call again from a
/// failure block, say. Every API that takes ``Parameters`` takes these too: a
/// `[String: any Sendable]` converts to `[String: Any]` by itself.
///
/// ```swift
/// let parameters: SendableParameters = ["q": query, "page": 2]
/// client.get("search", parameters: parameters, success: show, failure: { _, error in
///     askToRetry(error) { client.get("search", parameters: parameters, success: show, failure: nil) }
/// })
/// ```
///
/// A nested literal whose values mix types (`["ids": [1, "two"]]`) needs its type spelled
/// (`[1, "two"] as [any Sendable]`): Swift infers `[Any]` for it otherwise.
public typealias SendableParameters = [String: any Sendable]

/// Encodes parameters into a request: into its URL's query, or into its body with a matching
/// `Content-Type`.
///
/// Presets: ``RequestSerializer/formURLEncoded`` (the default of every client),
/// ``RequestSerializer/json``, ``RequestSerializer/propertyList``. Multipart
/// bodies are built with ``HTTPClient/multipartRequest(method:path:parameters:headers:constructingBody:)``.
public protocol RequestSerializer: Sendable {
    /// Returns `request` with `parameters` encoded into it.
    /// - Parameters:
    ///   - request: The request to encode into; its method decides where parameters go.
    ///   - parameters: The parameters, or nil for none.
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)`` when a value cannot be encoded.
    func serialize(_ request: URLRequest, parameters: Parameters?) throws -> URLRequest

    /// Returns `request` with an `Encodable` value encoded into it.
    ///
    /// The default implementation turns the value into parameters through `JSONEncoder` and
    /// calls ``serialize(_:parameters:)``; the JSON and property-list serializers encode it
    /// directly with their own encoders.
    /// - Parameters:
    ///   - request: The request to encode into.
    ///   - encodable: A value that encodes as a keyed container (a struct or dictionary).
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)``.
    func serialize<Value: Encodable>(_ request: URLRequest, encodable: Value) throws -> URLRequest
}

extension RequestSerializer {
    /// Encodes `encodable` through `JSONEncoder` into parameters, then calls ``serialize(_:parameters:)``.
    /// - Parameters:
    ///   - request: The request to encode into.
    ///   - encodable: A value that encodes as a keyed container.
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)``.
    public func serialize<Value: Encodable>(_ request: URLRequest, encodable: Value) throws -> URLRequest {
        try serialize(request, parameters: SerializableValue.parameters(from: encodable, encoder: JSONEncoder()))
    }
}

extension URLRequest {
    /// Whether `methods` lists this request's method (nil means GET).
    func methodIsIn(_ methods: Set<HTTPMethod>) -> Bool {
        methods.contains(HTTPMethod(rawValue: httpMethod ?? "GET"))
    }

    /// For the body serializers (JSON, property list): methods without a body (GET, HEAD,
    /// DELETE by default) carry their parameters in the query, as the form serializer writes
    /// them; nil for the other methods.
    func queryEncoded(_ parameters: Parameters, methods: Set<HTTPMethod>) throws -> URLRequest? {
        guard methodIsIn(methods) else { return nil }
        return try FormURLEncodedRequestSerializer(methodsEncodingParametersInURI: methods).serialize(self, parameters: parameters)
    }

    /// The request with `data` as its body and `contentType` unless the caller chose one.
    func withBody(_ data: Data, contentType: String) -> URLRequest {
        var request = self
        request.setContentTypeIfMissing(contentType)
        request.httpBody = data
        return request
    }

    /// Sets `Content-Type` unless the caller already chose one.
    mutating func setContentTypeIfMissing(_ value: String) {
        if self.value(forHTTPHeaderField: "Content-Type") == nil { setHeader(value, for: "Content-Type") }
    }
}

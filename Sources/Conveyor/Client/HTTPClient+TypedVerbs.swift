import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The async verbs. Each returns the body as `Data` by default, or any `Decodable` type named with
/// `as:` (decoded from JSON) — one generic path the verbs share, so a typed result is never a
/// second overload:
///
/// ```swift
/// let data = try await client.get("report.csv")                           // Data
/// let user = try await client.get("users/1", as: User.self)                // a Decodable
/// let made = try await client.post("users", body: NewUser(name: "Ada"), as: User.self, requestSerializer: .json)
/// ```
///
/// Any other response serializer's value comes from
/// ``HTTPClient/response(method:path:parameters:headers:requestSerializer:responseSerializer:uploadProgress:downloadProgress:)``.
extension HTTPClient {
    /// `GET`, returning the body as `Data` or decoded as `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - type: `Data.self` (the default) for the body as it arrived, or a `Decodable` type to decode it as JSON.
    ///   - decoder: The decoder for a `Decodable` type; nil (the default) decodes with a plain `JSONDecoder()`, made only when a value is decoded.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body, or the decoded value.
    /// - Throws: ``ConveyorError``; a body that does not decode is ``ConveyorError/responseSerializationFailed(underlying:response:data:)``.
    public func get<Value: Decodable & Sendable>(
        _ path: String, parameters: Parameters? = nil, as type: Value.Type = Data.self, decoder: JSONDecoder? = nil,
        headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        try await value(
            of: try request(method: .get, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer),
            as: type, decoder: decoder, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// `DELETE`, returning the body as `Data` or decoded as `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - type: `Data.self` (the default), or a `Decodable` type to decode the body as JSON.
    ///   - decoder: The decoder for a `Decodable` type; nil (the default) decodes with a plain `JSONDecoder()`, made only when a value is decoded.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body, or the decoded value.
    /// - Throws: ``ConveyorError``.
    public func delete<Value: Decodable & Sendable>(
        _ path: String, parameters: Parameters? = nil, as type: Value.Type = Data.self, decoder: JSONDecoder? = nil,
        headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        try await value(
            of: try request(method: .delete, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer),
            as: type, decoder: decoder, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// `POST` of parameters, returning the body as `Data` or decoded as `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    ///   - type: `Data.self` (the default), or a `Decodable` type to decode the body as JSON.
    ///   - decoder: The decoder for a `Decodable` type; nil (the default) decodes with a plain `JSONDecoder()`, made only when a value is decoded.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body, or the decoded value.
    /// - Throws: ``ConveyorError``.
    public func post<Value: Decodable & Sendable>(
        _ path: String, parameters: Parameters? = nil, as type: Value.Type = Data.self, decoder: JSONDecoder? = nil,
        headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        try await value(
            of: try request(method: .post, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer),
            as: type, decoder: decoder, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// `PUT` of parameters, returning the body as `Data` or decoded as `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    ///   - type: `Data.self` (the default), or a `Decodable` type to decode the body as JSON.
    ///   - decoder: The decoder for a `Decodable` type; nil (the default) decodes with a plain `JSONDecoder()`, made only when a value is decoded.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body, or the decoded value.
    /// - Throws: ``ConveyorError``.
    public func put<Value: Decodable & Sendable>(
        _ path: String, parameters: Parameters? = nil, as type: Value.Type = Data.self, decoder: JSONDecoder? = nil,
        headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        try await value(
            of: try request(method: .put, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer),
            as: type, decoder: decoder, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// `PATCH` of parameters, returning the body as `Data` or decoded as `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    ///   - type: `Data.self` (the default), or a `Decodable` type to decode the body as JSON.
    ///   - decoder: The decoder for a `Decodable` type; nil (the default) decodes with a plain `JSONDecoder()`, made only when a value is decoded.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body, or the decoded value.
    /// - Throws: ``ConveyorError``.
    public func patch<Value: Decodable & Sendable>(
        _ path: String, parameters: Parameters? = nil, as type: Value.Type = Data.self, decoder: JSONDecoder? = nil,
        headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        try await value(
            of: try request(method: .patch, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer),
            as: type, decoder: decoder, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// `POST` of an `Encodable` body, returning the response body as `Data` or decoded as `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - body: Encoded by the `requestSerializer` argument, or by the client's ``requestSerializer`` when nil.
    ///   - type: `Data.self` (the default), or a `Decodable` type to decode the response body as JSON.
    ///   - decoder: The decoder for a `Decodable` type; nil (the default) decodes with a plain `JSONDecoder()`, made only when a value is decoded.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: For example ``RequestSerializer/json``; nil uses ``requestSerializer``.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response body, or the decoded value.
    /// - Throws: ``ConveyorError``.
    public func post<Body: Encodable, Value: Decodable & Sendable>(
        _ path: String, body: Body, as type: Value.Type = Data.self, decoder: JSONDecoder? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        try await value(
            of: try request(method: .post, path: path, body: body, headers: headers, requestSerializer: requestSerializer),
            as: type, decoder: decoder, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// `PUT` of an `Encodable` body, returning the response body as `Data` or decoded as `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - body: Encoded by the `requestSerializer` argument, or by the client's ``requestSerializer`` when nil.
    ///   - type: `Data.self` (the default), or a `Decodable` type to decode the response body as JSON.
    ///   - decoder: The decoder for a `Decodable` type; nil (the default) decodes with a plain `JSONDecoder()`, made only when a value is decoded.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: For example ``RequestSerializer/json``; nil uses ``requestSerializer``.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response body, or the decoded value.
    /// - Throws: ``ConveyorError``.
    public func put<Body: Encodable, Value: Decodable & Sendable>(
        _ path: String, body: Body, as type: Value.Type = Data.self, decoder: JSONDecoder? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        try await value(
            of: try request(method: .put, path: path, body: body, headers: headers, requestSerializer: requestSerializer),
            as: type, decoder: decoder, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// `PATCH` of an `Encodable` body, returning the response body as `Data` or decoded as `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - body: Encoded by the `requestSerializer` argument, or by the client's ``requestSerializer`` when nil.
    ///   - type: `Data.self` (the default), or a `Decodable` type to decode the response body as JSON.
    ///   - decoder: The decoder for a `Decodable` type; nil (the default) decodes with a plain `JSONDecoder()`, made only when a value is decoded.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: For example ``RequestSerializer/json``; nil uses ``requestSerializer``.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response body, or the decoded value.
    /// - Throws: ``ConveyorError``.
    public func patch<Body: Encodable, Value: Decodable & Sendable>(
        _ path: String, body: Body, as type: Value.Type = Data.self, decoder: JSONDecoder? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        try await value(
            of: try request(method: .patch, path: path, body: body, headers: headers, requestSerializer: requestSerializer),
            as: type, decoder: decoder, uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// The one path of the verbs: the body as it arrived for `Data`, else decoded as JSON.
    // Inlined into each verb, for the reason `response(for:responseSerializer:configure:)` is.
    @inline(__always) func value<Value: Decodable & Sendable>(
        of request: URLRequest, as type: Value.Type, decoder: JSONDecoder?,
        uploadProgress: HTTPRequestOperation.ProgressHandler?, downloadProgress: HTTPRequestOperation.ProgressHandler?
    ) async throws -> Value {
        let configure = { (operation: HTTPRequestOperation) in
            operation.setProgressBlocks(upload: uploadProgress, download: downloadProgress)
        }
        // Both awaits in this one function: a helper for the `Data` case was one more async frame
        // kept in the task while the call waits. `Value` is `Data` here, so the cast cannot fail.
        if type == Data.self {
            return try await response(for: request, responseSerializer: DataResponseSerializer(), configure: configure).data as! Value
        }
        return try await response(
            for: request, responseSerializer: DecodableResponseSerializer<Value>(decoder: decoder ?? JSONDecoder()), configure: configure
        )
        .value
    }
}

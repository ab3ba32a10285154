import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Async continuations resume on this queue rather than the callback queue: an awaiting Task
/// resumes on its own executor anyway, so a hop to `.main` would only cost time.
private let asyncResumeQueue = DispatchQueue(label: "org.conveyor.async", attributes: .concurrent)

extension HTTPClient {
    /// Sends `request` through an operation built by this client and returns the full response.
    ///
    /// Cancelling the awaiting Task cancels the operation.
    /// - Parameters:
    ///   - request: The request.
    ///   - serializer: Turns the body into the value.
    /// - Returns: The response with the serialized value.
    /// - Throws: ``ConveyorError``.
    public func response<Serializer: ResponseSerializer>(
        for request: URLRequest, serializer: Serializer
    ) async throws -> HTTPResponse<Serializer.Output> where Serializer.Output: Sendable {
        let box = OperationCancellationBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let operation = self.operation(with: request, success: { operation, value in
                    continuation.resume(returning: HTTPResponse(
                        request: operation.currentRequest, response: operation.response!,
                        data: operation.responseData ?? Data(), value: value as! Serializer.Output,
                        metrics: operation.metrics!
                    ))
                }, failure: { _, error in
                    continuation.resume(throwing: error)
                })
                operation.responseSerializer = serializer
                operation.callbackQueue = asyncResumeQueue
                box.set(operation)
                enqueue(operation)
            }
        } onCancel: {
            box.cancel()
        }
    }

    /// Builds a request and returns the full response with the body as `Data`.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded by ``requestSerializer``; nil for none.
    /// - Returns: The response.
    /// - Throws: ``ConveyorError``.
    public func response(method: HTTPMethod, path: String, parameters: Parameters? = nil) async throws -> HTTPResponse<Data> {
        try await response(for: request(method: method, path: path, parameters: parameters), serializer: DataResponseSerializer())
    }

    /// `GET` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func get(_ path: String, parameters: Parameters? = nil) async throws -> Data {
        try await response(method: .get, path: path, parameters: parameters).data
    }

    /// `GET` decoding the JSON body into `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - type: The type to decode.
    ///   - decoder: The decoder; default a plain `JSONDecoder()`.
    /// - Returns: The decoded value.
    /// - Throws: ``ConveyorError``; a body that does not decode is ``ConveyorError/responseSerializationFailed(underlying:response:data:)``.
    public func get<Value: Decodable & Sendable>(
        _ path: String, parameters: Parameters? = nil, as type: Value.Type, decoder: JSONDecoder = JSONDecoder()
    ) async throws -> Value {
        try await response(
            for: request(method: .get, path: path, parameters: parameters),
            serializer: DecodableResponseSerializer<Value>(decoder: decoder)
        ).value
    }

    /// `HEAD` returning the response head.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    /// - Returns: The response.
    /// - Throws: ``ConveyorError``.
    public func head(_ path: String, parameters: Parameters? = nil) async throws -> HTTPURLResponse {
        try await response(method: .head, path: path, parameters: parameters).response
    }

    /// `POST` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func post(_ path: String, parameters: Parameters? = nil) async throws -> Data {
        try await response(method: .post, path: path, parameters: parameters).data
    }

    /// `PUT` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func put(_ path: String, parameters: Parameters? = nil) async throws -> Data {
        try await response(method: .put, path: path, parameters: parameters).data
    }

    /// `PATCH` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func patch(_ path: String, parameters: Parameters? = nil) async throws -> Data {
        try await response(method: .patch, path: path, parameters: parameters).data
    }

    /// `DELETE` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func delete(_ path: String, parameters: Parameters? = nil) async throws -> Data {
        try await response(method: .delete, path: path, parameters: parameters).data
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Async continuations resume on this queue rather than the callback queue: an awaiting Task
/// resumes on its own executor anyway, so a hop to `.main` would only cost time. Serial, so
/// progress blocks of one operation arrive in order.
private let asyncResumeQueue = DispatchQueue(label: "org.conveyor.async")

extension HTTPClient {
    /// Sends `request` through an operation built by this client and returns the full response.
    ///
    /// Cancelling the awaiting Task cancels the operation.
    /// - Parameters:
    ///   - request: The request.
    ///   - responseSerializer: Turns the body into the value.
    /// - Returns: The response with the serialized value.
    /// - Throws: ``ConveyorError``.
    public func response<Serializer: ResponseSerializer>(
        for request: URLRequest, responseSerializer: Serializer
    ) async throws -> HTTPResponse<Serializer.Output> where Serializer.Output: Sendable {
        try await response(for: request, responseSerializer: responseSerializer) { _ in }
    }

    /// The shared implementation: `configure` runs on the operation before it is enqueued.
    func response<Serializer: ResponseSerializer>(
        for request: URLRequest, responseSerializer: Serializer, configure: (HTTPRequestOperation) -> Void
    ) async throws -> HTTPResponse<Serializer.Output> where Serializer.Output: Sendable {
        let box = OperationCancellationBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let operation = self.operation(
                    with: request,
                    success: { operation, value in
                        continuation.resume(
                            returning: HTTPResponse(
                                request: operation.currentRequest, head: operation.responseHead!,
                                data: operation.responseData ?? Data(), value: value as! Serializer.Output,
                                metrics: operation.metrics!
                            ))
                    },
                    failure: { _, error in
                        continuation.resume(throwing: error)
                    })
                operation.responseSerializer = responseSerializer
                operation.callbackQueue = asyncResumeQueue  // progress blocks, in order
                configure(operation)
                // Resuming needs no hop — unless progress blocks were set: then the result comes
                // through the same serial queue after them, so every one has run when the call returns.
                operation.mutableState.withLock {
                    $0.deliversInline = $0.uploadProgressHandler == nil && $0.downloadProgressHandler == nil
                }
                box.set(operation)
                enqueue(operation)
            }
        } onCancel: {
            box.cancel()
        }
    }

    /// Builds a request and returns the full response with the body as `Data`.
    ///
    /// Progress blocks run in order on a Conveyor serial queue, not the callback queue; every
    /// one of them has run when the call returns.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded by ``requestSerializer``; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response.
    /// - Throws: ``ConveyorError``.
    public func response(
        method: HTTPMethod, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> HTTPResponse<Data> {
        let request = try request(
            method: method, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer)
        return try await response(for: request, responseSerializer: DataResponseSerializer()) {
            $0.setProgressBlocks(upload: uploadProgress, download: downloadProgress)
        }
    }

    /// Builds a request whose body is an `Encodable` value and returns the full response.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against ``baseURL``.
    ///   - body: Encoded by `requestSerializer` (for example a JSON body with ``RequestSerializer/json``).
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response.
    /// - Throws: ``ConveyorError``.
    public func response<Body: Encodable>(
        method: HTTPMethod, path: String, body: Body, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> HTTPResponse<Data> {
        let request = try request(method: method, path: path, encodable: body, headers: headers, requestSerializer: requestSerializer)
        return try await response(for: request, responseSerializer: DataResponseSerializer()) {
            $0.setProgressBlocks(upload: uploadProgress, download: downloadProgress)
        }
    }

    /// `GET` decoding the JSON body into `type`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - type: The type to decode.
    ///   - decoder: The decoder; default a plain `JSONDecoder()`.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The decoded value.
    /// - Throws: ``ConveyorError``; a body that does not decode is ``ConveyorError/responseSerializationFailed(underlying:response:data:)``.
    public func get<Value: Decodable & Sendable>(
        _ path: String, parameters: Parameters? = nil, as type: Value.Type, decoder: JSONDecoder = JSONDecoder(),
        headers: HTTPHeaders = [:], downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Value {
        let request = try request(method: .get, path: path, parameters: parameters, headers: headers)
        return try await response(for: request, responseSerializer: DecodableResponseSerializer<Value>(decoder: decoder)) {
            $0.setProgressBlocks(upload: nil, download: downloadProgress)
        }.value
    }

    /// `HEAD` returning the response head.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    /// - Returns: The response.
    /// - Throws: ``ConveyorError``.
    public func head(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil
    ) async throws -> HTTPURLResponse {
        try await response(method: .head, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer)
            .response
    }

    /// `GET` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func get(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Data {
        try await response(
            method: .get, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress
        ).data
    }

    /// `DELETE` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func delete(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Data {
        try await response(
            method: .delete, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress
        ).data
    }

    /// `POST` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func post(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Data {
        try await response(
            method: .post, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress
        ).data
    }

    /// `PUT` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func put(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Data {
        try await response(
            method: .put, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress
        ).data
    }

    /// `PATCH` returning the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The body.
    /// - Throws: ``ConveyorError``.
    public func patch(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Data {
        try await response(
            method: .patch, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress
        ).data
    }
}

extension HTTPClient {
    /// `POST` with an `Encodable` body, returning the response body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - body: Encoded by the `requestSerializer` argument, or by the client's ``requestSerializer`` when nil.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: For example ``RequestSerializer/json``; nil uses ``requestSerializer``.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response body.
    /// - Throws: ``ConveyorError``.
    public func post<Body: Encodable>(
        _ path: String, body: Body, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Data {
        try await response(
            method: .post, path: path, body: body, headers: headers, requestSerializer: requestSerializer,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress
        ).data
    }

    /// `PUT` with an `Encodable` body, returning the response body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - body: Encoded by the `requestSerializer` argument, or by the client's ``requestSerializer`` when nil.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: For example ``RequestSerializer/json``; nil uses ``requestSerializer``.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response body.
    /// - Throws: ``ConveyorError``.
    public func put<Body: Encodable>(
        _ path: String, body: Body, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Data {
        try await response(
            method: .put, path: path, body: body, headers: headers, requestSerializer: requestSerializer,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress
        ).data
    }
}

extension HTTPRequestOperation {
    /// Sets both progress blocks (nil leaves none).
    func setProgressBlocks(upload: ProgressHandler?, download: ProgressHandler?) {
        mutableState.withLock {
            $0.uploadProgressHandler = upload
            $0.downloadProgressHandler = download
        }
    }
}

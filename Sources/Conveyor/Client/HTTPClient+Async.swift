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
    // Inlined into its callers: an async function's frame stays allocated in the task while the
    // request waits, and the task allocator grows in slabs of about 1 kB (a pending call went
    // 4.09 -> 3.96 kB with the wrapper above).
    @inline(__always) func response<Serializer: ResponseSerializer>(
        for request: URLRequest, responseSerializer: Serializer, configure: (HTTPRequestOperation) -> Void
    ) async throws -> HTTPResponse<Serializer.Output> where Serializer.Output: Sendable {
        let box = OperationCancellationBox()
        // The value comes back typed from the serializer itself, not through the operation's `Any?`.
        let serializer = ValueKeepingSerializer(wrapped: responseSerializer)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let operation = self.operation(
                    with: request,
                    success: { operation, _ in
                        continuation.resume(with: HTTPResponse<Serializer.Output>.finished(operation, value: serializer.kept.current))
                    },
                    failure: { _, error in
                        continuation.resume(throwing: error)
                    })
                operation.responseSerializer = serializer
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
        try await response(
            method: method, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            responseSerializer: DataResponseSerializer(), uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// Builds a request and returns the full response, its body turned into a value by
    /// `responseSerializer` — the one path every verb's typed result takes.
    ///
    /// ```swift
    /// let page = try await client.response(method: .get, path: "index.html", responseSerializer: .string).value
    /// ```
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded by ``requestSerializer``; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - responseSerializer: Turns the body into the value (``ResponseSerializer/string``, `.json`, `.decodable(_:)`, …).
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response with the serialized value.
    /// - Throws: ``ConveyorError``.
    public func response<Serializer: ResponseSerializer>(
        method: HTTPMethod, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil, responseSerializer: Serializer,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> HTTPResponse<Serializer.Output> where Serializer.Output: Sendable {
        let request = try request(
            method: method, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer)
        return try await response(for: request, responseSerializer: responseSerializer) {
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
        try await response(
            method: method, path: path, body: body, headers: headers, requestSerializer: requestSerializer,
            responseSerializer: DataResponseSerializer(), uploadProgress: uploadProgress, downloadProgress: downloadProgress)
    }

    /// Builds a request whose body is an `Encodable` value and returns the full response, its
    /// body turned into a value by `responseSerializer`.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against ``baseURL``.
    ///   - body: Encoded by `requestSerializer` (for example a JSON body with ``RequestSerializer/json``).
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - responseSerializer: Turns the body into the value.
    ///   - uploadProgress: Called as the request body is sent (bytes, total sent, total expected); nil for none.
    ///   - downloadProgress: Called as the response body arrives (bytes, total received, total expected or -1); nil for none.
    /// - Returns: The response with the serialized value.
    /// - Throws: ``ConveyorError``.
    public func response<Body: Encodable, Serializer: ResponseSerializer>(
        method: HTTPMethod, path: String, body: Body, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        responseSerializer: Serializer,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> HTTPResponse<Serializer.Output> where Serializer.Output: Sendable {
        let request = try request(method: method, path: path, body: body, headers: headers, requestSerializer: requestSerializer)
        return try await response(for: request, responseSerializer: responseSerializer) {
            $0.setProgressBlocks(upload: uploadProgress, download: downloadProgress)
        }
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

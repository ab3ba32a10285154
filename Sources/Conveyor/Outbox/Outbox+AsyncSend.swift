import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Outbox {
    /// Accepts a request whose parameters are encoded by `requestSerializer`, like
    /// ``sendSynchronously(method:path:parameters:headers:requestSerializer:)``, with its disk work (one to
    /// three `fsync`s) on a thread of its own: a `send` from a Task never blocks a thread of
    /// Swift Concurrency's cooperative pool. Returns once the item is on disk, synced.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against the client's base URL now.
    ///   - parameters: Encoded now; nil for none.
    ///   - headers: Stored with the item; no credentials here.
    ///   - requestSerializer: Overrides the client's serializer; nil uses it.
    /// - Returns: The item's identifier.
    /// - Throws: ``ConveyorError``, as the synchronous form.
    @discardableResult
    public func send(
        method: HTTPMethod, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil
    ) async throws -> UUID {
        let request = try HTTPClient.wrappingEncoderErrors {
            try (requestSerializer ?? client.requestSerializer).serialize(bareRequest(method, path, headers), parameters: parameters)
        }
        return try await acceptOffPool(request, body: request.httpBody.map(BodySource.data) ?? .none)
    }

    /// Accepts a request whose body is an `Encodable` value (encoded now, on the caller), like
    /// ``sendSynchronously(method:path:body:headers:requestSerializer:)``, with its disk work off the
    /// cooperative pool.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against the client's base URL now.
    ///   - body: Encoded now.
    ///   - headers: Stored with the item; no credentials here.
    ///   - requestSerializer: Overrides the client's serializer; nil uses it.
    /// - Returns: The item's identifier.
    /// - Throws: ``ConveyorError``, as the synchronous form.
    @discardableResult
    public func send<Body: Encodable>(
        method: HTTPMethod, path: String, body: Body, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil
    ) async throws -> UUID {
        let request = try HTTPClient.wrappingEncoderErrors {
            try (requestSerializer ?? client.requestSerializer).serialize(bareRequest(method, path, headers), encodable: body)
        }
        return try await acceptOffPool(request, body: request.httpBody.map(BodySource.data) ?? .none)
    }

    /// Accepts a `multipart/form-data` request, like ``sendSynchronously(method:path:parameters:headers:constructingBody:)``:
    /// `constructingBody` runs on the caller; the parts are read and written to disk off the cooperative pool.
    /// - Parameters:
    ///   - method: The method; default `POST`.
    ///   - path: Resolved against the client's base URL now.
    ///   - parameters: Fields sent before the appended parts; nil for none.
    ///   - headers: Stored with the item; no credentials here.
    ///   - constructingBody: Appends parts.
    /// - Returns: The item's identifier.
    /// - Throws: ``ConveyorError``, as the synchronous form.
    @discardableResult
    public func send(
        method: HTTPMethod = .post, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        constructingBody: (MultipartFormData) throws -> Void
    ) async throws -> UUID {
        let (request, form) = try multipartRequest(method, path, parameters, headers, constructingBody)
        return try await acceptOffPool(request, body: .multipart(form))
    }

    /// Accepts a request whose body is the file at `fileURL`, like ``sendSynchronously(method:path:fileURL:headers:)``,
    /// copied into the outbox off the cooperative pool.
    /// - Parameters:
    ///   - method: The method; default `POST`.
    ///   - path: Resolved against the client's base URL now.
    ///   - fileURL: A readable regular file.
    ///   - headers: Stored with the item; `Content-Type` defaults to the file extension's type.
    /// - Returns: The item's identifier.
    /// - Throws: ``ConveyorError``, as the synchronous form.
    @discardableResult
    public func send(method: HTTPMethod = .post, path: String, fileURL: URL, headers: HTTPHeaders = [:]) async throws -> UUID {
        let request = try fileRequest(method, path, fileURL, headers)
        return try await acceptOffPool(request, body: .file(fileURL))
    }

    /// Runs ``accept(_:body:)`` on a thread of its own and waits for it without holding a thread
    /// of the pool. Not cancellable: once it started, the item is either accepted or not, never half.
    private func acceptOffPool(_ request: URLRequest, body: BodySource) async throws -> UUID {
        // The body (a multipart form is a class, not Sendable) was made by this call and is
        // used by no one else from here on: handing it to the thread is a transfer, not sharing.
        nonisolated(unsafe) let body = body
        return try await withCheckedThrowingContinuation { continuation in
            Self.sendQueue.async { continuation.resume(with: Result { try self.accept(request, body: body) }) }
        }
    }

    /// Where async sends do their disk work: concurrent, like sends from several threads, and
    /// off Swift Concurrency's pool, whose few threads every Task shares.
    static let sendQueue = DispatchQueue(label: "org.conveyor.outbox.send", qos: .utility, attributes: .concurrent)
}

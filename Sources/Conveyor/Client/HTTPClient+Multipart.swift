import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// Builds a `multipart/form-data` request: `parameters` become form fields first (flattened
    /// like a query string), then the parts `constructingBody` appends.
    ///
    /// Bodies up to ``Configuration/multipartMemoryThreshold`` are built in memory; larger
    /// ones are written to a temporary file, which an operation uploads with an exact
    /// `Content-Length` and removes when it finishes, fails or is cancelled; a request that is
    /// never sent removes it when its last copy goes away. Use the returned request for one
    /// operation.
    /// - Parameters:
    ///   - method: The method; default `POST`.
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Fields sent before the appended parts; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - constructingBody: Appends parts; may throw (for a missing file) to abandon the request.
    /// - Returns: The request, with `Content-Type` and `Content-Length` set.
    /// - Throws: ``ConveyorError/multipartEncodingFailed(reason:)`` naming a bad file, or
    ///   ``ConveyorError/invalidURL(path:baseURL:)``, before anything is sent.
    public func multipartRequest(
        method: HTTPMethod = .post, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        constructingBody: (MultipartFormData) throws -> Void
    ) throws -> URLRequest {
        var (request, _) = try baseRequest(method: method, path: path, headers: headers)
        let form = MultipartFormData()
        for (name, value) in try QueryStringEncoder().pairs(for: parameters ?? [:]) {
            form.append(value ?? "", name: name)
        }
        try constructingBody(form)
        request.setHeader(form.contentType, for: "Content-Type")
        request.setHeader(String(form.contentLength), for: "Content-Length")
        let inMemory = form.contentLength <= configuration.multipartMemoryThreshold
        if inMemory, form.throttle == nil {
            request.httpBody = try form.encode()
            return request
        }
        if let throttle = form.throttle {
            #if !canImport(Darwin)
                // corelibs sends stream bodies chunked; a Content-Length beside chunking is invalid.
                request.setHeader(nil, for: "Content-Length")
            #endif
            if inMemory {
                request.httpBodyStream = ThrottledInputStream(
                    source: .data(try form.encode()), length: form.contentLength, packetSize: throttle.packetSize, delay: throttle.delay
                )
                return request
            }
        }
        let file = configuration.temporaryDirectory.appendingPathComponent("conveyor-multipart-\(UUID().uuidString)")
        try form.writeEncodedData(to: file)
        // Owned by the body stream from here: removed when the operation ends, or with the
        // last copy of a request that is never sent.
        let temporary = TemporaryBodyFile(file)
        if let throttle = form.throttle {
            let stream = ThrottledInputStream(
                source: .file(file), length: form.contentLength, packetSize: throttle.packetSize, delay: throttle.delay)
            stream.temporaryFile = temporary
            request.httpBodyStream = stream
        } else {
            let snapshot: BodyFile.Snapshot
            do {
                snapshot = try BodyFile.Snapshot(of: file)
            } catch {
                throw ConveyorError.multipartEncodingFailed(reason: .bodyFileWriteFailed(file, error))
            }
            request.httpBodyStream = BodyFileStream(snapshot: snapshot, temporaryFile: temporary)
        }
        return request
    }

    /// Enqueues a multipart `POST` (AFNetworking's `POST:parameters:constructingBodyWithBlock:`).
    ///
    /// A body that cannot be built (a missing file) still returns an enqueued operation, which
    /// fails at once with the error through `failure`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Fields sent before the appended parts.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - constructingBody: Appends parts.
    ///   - success: Run with the operation and its serialized value.
    ///   - failure: Run with the operation and the error.
    /// - Returns: The enqueued operation; set its upload progress block right away to follow the upload.
    @discardableResult
    public func post(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], constructingBody: (MultipartFormData) throws -> Void,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        enqueueOperation(success: success, failure: failure) {
            try multipartRequest(path: path, parameters: parameters, headers: headers, constructingBody: constructingBody)
        }
    }

    /// Sends a multipart `POST` and returns the response body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Fields sent before the appended parts.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - constructingBody: Appends parts.
    ///   - uploadProgress: Called as the body is sent, in order on a Conveyor serial queue; nil for none.
    ///   - downloadProgress: Called as the response body arrives; nil for none.
    /// - Returns: The response body.
    /// - Throws: ``ConveyorError``.
    public func post(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], constructingBody: (MultipartFormData) throws -> Void,
        uploadProgress: HTTPRequestOperation.ProgressHandler? = nil, downloadProgress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> Data {
        let request = try multipartRequest(path: path, parameters: parameters, headers: headers, constructingBody: constructingBody)
        return try await response(for: request, responseSerializer: DataResponseSerializer()) {
            $0.setProgressBlocks(upload: uploadProgress, download: downloadProgress)
        }.data
    }
}

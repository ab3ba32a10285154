import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// Builds a request whose body is the file at `fileURL`, read from disk as it is sent (never
    /// loaded into memory) with its exact `Content-Length` — AFNetworking's
    /// `uploadTaskWithRequest:fromFile:`, Alamofire's `upload(_:to:)`.
    ///
    /// Send it like any request: `response(for:responseSerializer:)`, or
    /// `operation(with:success:failure:)` and ``enqueue(_:)``. A retry or a 307/308 redirect
    /// sends the file again from its start. The file is yours: Conveyor does not remove it. Use
    /// the returned request for one operation.
    ///
    /// ```swift
    /// let upload = try client.request(method: .put, path: "backups/latest", bodyFile: archiveURL)
    /// let response = try await client.response(for: upload, responseSerializer: DataResponseSerializer())
    /// ```
    /// - Parameters:
    ///   - method: The method; default `POST`.
    ///   - path: Resolved against ``baseURL``.
    ///   - fileURL: A `file:` URL of a readable regular file.
    ///   - headers: Headers for this request alone; a `Content-Type` here wins over the one
    ///     guessed from the file's extension (`application/octet-stream` when unknown).
    /// - Returns: The request, with `Content-Type` and `Content-Length` set.
    /// - Throws: ``ConveyorError/bodyFileFailed(reason:)`` naming the file when it is not a file
    ///   URL, missing, a directory or unreadable; ``ConveyorError/invalidURL(path:baseURL:)``.
    ///   Nothing is sent.
    public func request(method: HTTPMethod = .post, path: String, bodyFile fileURL: URL, headers: HTTPHeaders = [:]) throws
        -> URLRequest
    {
        let length = try BodyFile.length(of: fileURL)
        var (request, _) = try baseRequest(method: method, path: path, headers: headers)
        if request.value(forHTTPHeaderField: "Content-Type") == nil {
            let type = fileURL.pathExtension.isEmpty ? "application/octet-stream" : MIMEType.forPath(fileURL.lastPathComponent)
            request.setHeader(type, for: "Content-Type")
        }
        request.setHeader(String(length), for: "Content-Length")
        let stream = BodyFileStream(fileURL: fileURL)
        // The stream is how the request carries the file; the operation finds the file through
        // it and hands the file itself to the transport (an exact length, not chunked).
        request.httpBodyStream = stream
        UploadBodyFiles.shared.register(stream, file: fileURL, isTemporary: false)
        return request
    }
}

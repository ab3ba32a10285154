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
    /// The length is fixed here, and so is the file: the wire carries exactly the announced
    /// `Content-Length` bytes, never more. A file that is not the same when it is sent — it grew,
    /// shrank, was rewritten, replaced or deleted (its size, modification time or inode differ) —
    /// fails with ``ConveyorError/bodyFileFailed(reason:)`` before anything is sent; one that
    /// grows, shrinks or is rewritten during the upload fails before its last byte goes out, so
    /// the server never receives a whole request made of two versions of the file. (A file
    /// replaced or deleted during the upload leaves the open one intact: it is sent whole.)
    ///
    /// Conveyor owns the body's framing: a `Transfer-Encoding` field (here, in the client's
    /// default headers, or added to the returned request) or a changed `Content-Length` is
    /// refused with ``ConveyorError/BodyFileFailureReason/framingConflict(_:field:)`` rather than
    /// sent beside the exact length (RFC 9112 §6.1), which would let a server and a proxy on the
    /// way disagree about where the request ends.
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
    ///   URL, missing, a directory, unreadable or not a regular file (a FIFO, `/dev/zero`, a
    ///   socket), or when a `Transfer-Encoding` field is given;
    ///   ``ConveyorError/invalidURL(path:baseURL:)``. Nothing is sent.
    public func request(method: HTTPMethod = .post, path: String, bodyFile fileURL: URL, headers: HTTPHeaders = [:]) throws
        -> URLRequest
    {
        let snapshot = try BodyFile.Snapshot(of: fileURL)
        var (request, _) = try baseRequest(method: method, path: path, headers: headers)
        if request.value(forHTTPHeaderField: "Content-Type") == nil {
            let type = fileURL.pathExtension.isEmpty ? "application/octet-stream" : MIMEType.forPath(fileURL.lastPathComponent)
            request.setHeader(type, for: "Content-Type")
        }
        request.setHeader(String(snapshot.length), for: "Content-Length")
        // The stream is how the request carries the file; the operation finds the file through
        // it and hands the file itself to the transport (an exact length, not chunked).
        let stream = BodyFileStream(snapshot: snapshot)
        request.httpBodyStream = stream
        if let error = stream.framingConflict(in: request.allHTTPHeaderFields ?? [:]) { throw error }
        return request
    }
}

extension BodyFileStream {
    /// The file body of `request`, checked against the request's framing fields; nil when its
    /// body is not a file Conveyor sends itself.
    /// - Throws: ``ConveyorError/BodyFileFailureReason/framingConflict(_:field:)``.
    static func bodyFile(of request: URLRequest, fields: [String: String]) throws(ConveyorError) -> BodyFile.Snapshot? {
        guard let stream = request.httpBodyStream as? BodyFileStream else { return nil }
        if let error = stream.framingConflict(in: fields) { throw error }
        return stream.snapshot
    }

    /// A `Transfer-Encoding`, or a `Content-Length` other than the file's length, in `fields`.
    func framingConflict(in fields: [String: String]) -> ConveyorError? {
        for (name, value) in fields {
            if name.equalsIgnoringASCIICase("Transfer-Encoding") {
                return .bodyFileFailed(reason: .framingConflict(snapshot.url, field: "Transfer-Encoding"))
            }
            if name.equalsIgnoringASCIICase("Content-Length"), Int64(value.trimmingCharacters(in: .whitespaces)) != snapshot.length {
                return .bodyFileFailed(reason: .framingConflict(snapshot.url, field: "Content-Length"))
            }
        }
        return nil
    }
}

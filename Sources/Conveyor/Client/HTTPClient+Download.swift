import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// Enqueues a `GET` whose body streams into a file.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - destination: Where the file goes.
    ///   - options: How the destination is prepared; default ``FileDownloadOperation/Options/default``.
    ///   - progress: Called on the callback queue with (bytes, total so far, expected or -1); nil for none.
    ///   - success: Run with the operation and the file's URL.
    ///   - failure: Run with the operation and the error.
    /// - Returns: The enqueued ``FileDownloadOperation``.
    @discardableResult
    public func download(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], to destination: FileDownloadOperation.Destination,
        options: FileDownloadOperation.Options = .default,
        progress: HTTPRequestOperation.ProgressHandler? = nil,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> FileDownloadOperation {
        let operation: FileDownloadOperation
        do {
            operation = downloadOperation(
                for: try request(method: .get, path: path, parameters: parameters, headers: headers), to: destination, options: options,
                progress: progress
            )
        } catch {
            operation = downloadOperation(
                for: URLRequest(url: baseURL ?? Self.placeholderURL), to: destination, options: options, progress: progress)
            operation.failWhenStarted(with: error)
        }
        operation.setCompletionBlock(success: success, failure: failure)
        enqueue(operation)
        return operation
    }

    /// Downloads into a file and returns its URL. Cancelling the Task cancels the download and
    /// removes the partial file.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - destination: Where the file goes.
    ///   - options: How the destination is prepared; default ``FileDownloadOperation/Options/default``.
    ///   - progress: Called with (bytes, total so far, expected or -1); nil for none.
    /// - Returns: The downloaded file.
    /// - Throws: ``ConveyorError``; ``ConveyorError/downloadFailed(reason:)`` names the path on disk errors.
    public func download(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], to destination: FileDownloadOperation.Destination,
        options: FileDownloadOperation.Options = .default,
        progress: HTTPRequestOperation.ProgressHandler? = nil
    ) async throws -> URL {
        let request = try request(method: .get, path: path, parameters: parameters, headers: headers)
        let box = OperationCancellationBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let operation = downloadOperation(for: request, to: destination, options: options, progress: progress)
                operation.setCompletionBlock(
                    // The operation's own type, not the block's `HTTPRequestOperation`: no cast.
                    // (Blocks are released when it finishes, so capturing it makes no cycle.)
                    success: { [operation] _, _ in
                        guard let url = operation.destinationURL else {
                            continuation.resume(throwing: ConveyorError.network(URLError(.cannotCreateFile)))
                            return
                        }
                        continuation.resume(returning: url)
                    },
                    failure: { _, error in
                        continuation.resume(throwing: error)
                    })
                box.set(operation)
                enqueue(operation)
            }
        } onCancel: {
            box.cancel()
        }
    }

    private func downloadOperation(
        for request: URLRequest, to destination: FileDownloadOperation.Destination, options: FileDownloadOperation.Options,
        progress: HTTPRequestOperation.ProgressHandler?
    ) -> FileDownloadOperation {
        let operation = FileDownloadOperation(request: request, destination: destination, options: options)
        operation.adoptSettings(of: self)
        operation.setDownloadProgressBlock(progress)
        return operation
    }
}

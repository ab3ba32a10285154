import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// Sets the blocks run when the operation finishes; exactly one of them runs, once.
    ///
    /// Both are released after they run, so capturing the operation in them does not leak it.
    /// - Parameters:
    ///   - success: Called with the serialized value when the response passed validation.
    ///   - failure: Called with the error otherwise, including cancellation.
    public func setCompletionBlock(success: Success?, failure: Failure?) {
        mutableState.withLock {
            $0.success = success
            $0.failure = failure
        }
    }

    /// Called with the operation and a chunk of the response body.
    public typealias ChunkHandler = @Sendable (HTTPRequestOperation, Data) -> Void

    /// Sets the block that receives the body of the delivered response chunk by chunk, in
    /// order, on the callback queue, instead of the body being kept in memory (the callback
    /// form of ``HTTPClient/stream(_:method:parameters:headers:requestSerializer:bufferLimit:)``).
    /// The completion block runs after the last chunk's when the callback queue is serial (the
    /// default). When the blocks fall behind by ``HTTPStream/defaultBufferLimit`` bytes the
    /// transfer pauses until they catch up (on the curl transport, and URLSession on Apple
    /// platforms). Bodies of rejected statuses stay in memory for the error. A pause, or a retry
    /// after a dropped connection, continues with a `Range` request where the server can resume
    /// (the block then gets the rest); a server that sends the body from the start again fails the
    /// operation with ``ConveyorError/OutputStreamFailureReason/cannotRestart(bytesWritten:)``, as
    /// for ``outputStream``: chunks already handed over are never handed over again. Set it
    /// before the operation starts.
    /// - Parameter block: The block; nil keeps bodies in memory.
    public func setChunkReceivedBlock(_ block: ChunkHandler?) {
        write(\.chunkHandler, block)
    }

    /// Called with the operation and a response head.
    public typealias ResponseHandler = @Sendable (HTTPRequestOperation, HTTPResponseHead) -> Void

    /// Sets the block called on the callback queue when the head of the response the
    /// operation delivers arrives — status and headers, before any body (the heads of followed
    /// redirects are not reported). It runs before the download progress blocks of that
    /// response; a retried or resumed transfer reports its new response again.
    /// - Parameter block: The block; nil removes it.
    public func setResponseReceivedBlock(_ block: ResponseHandler?) {
        write(\.responseReceivedHandler, block)
    }

    /// Sets the block called on the callback queue as request body bytes are sent
    /// (multipart and plain uploads). The expected total is the body's length.
    ///
    /// The totals are those of the body's current sending: when the body goes out again — a
    /// 307 or 308 redirect, a retry, a replay after a refreshed credential, a resume after
    /// ``pause()`` — the sent total starts over from the first bytes, as the server receives it
    /// again. Every call runs before the completion block (on a serial callback queue, the
    /// default), none after it.
    /// - Parameter block: The block; nil removes it.
    public func setUploadProgressBlock(_ block: ProgressHandler?) {
        write(\.uploadProgressHandler, block)
    }

    /// Sets the block called on the callback queue as response body bytes arrive. The
    /// expected total is the response's `Content-Length`, or -1 when it has none.
    /// - Parameter block: The block; nil removes it.
    public func setDownloadProgressBlock(_ block: ProgressHandler?) {
        write(\.downloadProgressHandler, block)
    }

    /// The request body sent so far, as a `Progress` (total -1 while unknown).
    ///
    /// Created on first access and kept up to date from then on: a corelibs `Progress` update
    /// takes locks and posts KVO, and nobody needs thousands of them per download otherwise.
    public var uploadProgress: Progress { progress(upload: true) }

    /// The response body received so far, as a `Progress`: total from `Content-Length` (or
    /// `Content-Range`), -1 while unknown or when more arrives than announced (a gzip body).
    /// Created on first access, like ``uploadProgress``.
    public var downloadProgress: Progress { progress(upload: false) }

    /// The upload or download `Progress`, created with the current counts if it does not exist yet.
    private func progress(upload: Bool) -> Progress {
        let (progress, made, completed, expected) = transfer { $0.progress(upload: upload) }
        if made { updateProgress(progress, completed: completed, expected: expected) }
        return progress
    }
}

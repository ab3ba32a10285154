import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// The request sent last: ``request``, or the target of the last redirect followed.
    public var currentRequest: URLRequest { transfer { $0.currentRequest } }

    /// The last response head received, as Foundation's type; nil before it arrives.
    ///
    /// Built from ``responseHead`` on first access and kept: code on the hot path (serializers,
    /// validation, hooks) reads ``responseHead``, which costs nothing extra.
    public var response: HTTPURLResponse? { responseHead?.urlResponse }

    /// The last response head received; nil before it arrives.
    public var responseHead: HTTPResponseHead? { transfer { $0.response } }

    /// The body received so far; nil before a response arrives.
    public var responseData: Data? {
        let (data, sink) = mutableState.withLock { state -> (Data?, OutputStreamSink?) in
            (state.transfer.response == nil ? nil : state.transfer.data, state.transfer.streamsBody ? state.outputSink : nil)
        }
        guard let sink else { return data }
        return sink.memoryContents ?? Data()
    }

    /// The body decoded as text with the response's charset (a BOM, UTF-8 or ISO-8859-1 when
    /// it names none); nil when there is no body or the charset does not decode it.
    public var responseString: String? {
        let charset = responseHead?.textEncodingName
        guard let data = responseData, !data.isEmpty else { return nil }
        return try? CharsetDecoder.decode(data, charset: charset)
    }

    /// The value the ``responseSerializer`` produced; nil until the operation succeeded.
    public var responseObject: Any? { transfer { $0.responseObject?.value } }

    /// Why the operation failed; nil while it runs and after success.
    public var error: ConveyorError? { transfer { $0.error } }

    /// Timing and size facts measured by the operation; nil until it finished.
    public var metrics: OperationMetrics? { transfer { $0.metrics } }
}

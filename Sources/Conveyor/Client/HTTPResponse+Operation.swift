import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPResponse {
    /// The one place a response is made from a finished operation (the async calls, the
    /// batch, the outbox): its failure if it failed, else the request sent last, the head, the
    /// body, `value` and the metrics. An operation that reports success without a response
    /// head, metrics or a value is a defect, reported as a typed error rather than a crash.
    /// - Parameters:
    ///   - operation: A finished operation.
    ///   - value: The serialized value, typed (kept by ``ValueKeepingSerializer``, or the
    ///     body itself); nil when the serializer made none.
    static func finished(_ operation: HTTPRequestOperation, value: Value?) -> Result<Self, ConveyorError> {
        if let error = operation.error { return .failure(error) }
        guard let head = operation.responseHead, let metrics = operation.metrics else {
            return .failure(.network(URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: Self.missingResponse])))
        }
        let data = operation.responseData ?? Data()
        guard let value else {
            let reason = "the serializer made no \(Value.self)"
            return .failure(
                .responseSerializationFailed(
                    underlying: URLError(.cannotParseResponse, userInfo: [NSLocalizedDescriptionKey: reason]),
                    response: head.urlResponse, data: data.isEmpty ? nil : data))
        }
        return .success(HTTPResponse(request: operation.currentRequest, head: head, data: data, value: value, metrics: metrics))
    }

    /// Why a finished operation gave no response.
    static var missingResponse: String { "the operation finished without a response" }
}

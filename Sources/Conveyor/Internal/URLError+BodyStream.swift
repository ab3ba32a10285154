import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLError {
    /// `requestBodyStreamExhausted`, as URLSession names a request body stream that failed or
    /// cannot be sent again: every transport and the operation report such a body this way.
    /// - Parameters:
    ///   - description: What happened to the body.
    ///   - url: The request's URL, when known.
    ///   - underlying: The stream's own error, when it gave one.
    static func bodyStreamExhausted(_ description: String, url: URL? = nil, underlying: (any Error)? = nil) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let url { info[NSURLErrorFailingURLErrorKey] = url }
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        return URLError(.requestBodyStreamExhausted, userInfo: info)
    }
}

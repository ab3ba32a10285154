import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension CachedResponse {
    /// The `206 Partial Content` this stored complete response gives a `Range` request (RFC 9110
    /// §14, RFC 9111 §3.4 in reverse): one satisfiable byte range of a stored 200, with the stored
    /// header fields, `Content-Range` and `Content-Length`. Nil — the request goes on as it would
    /// without a range — for several ranges, an unsatisfiable one, or an `If-Range` that does not
    /// name this response's strong `ETag` or `Last-Modified`.
    func partialContent(for request: URLRequest) -> CachedResponse? {
        guard statusCode == 200, method == "GET", let range = request.value(forHTTPHeaderField: "Range") else { return nil }
        if let condition = request.value(forHTTPHeaderField: "If-Range") {
            let strongETag = headers["ETag"].flatMap { $0.hasPrefix("W/") ? nil : $0 }
            guard condition == strongETag || condition == headers["Last-Modified"] else { return nil }
        }
        guard let bytes = HTTPGrammar.byteRange(range, length: data.count) else { return nil }
        var partial = self
        partial.statusCode = 206
        partial.data = data.subdata(in: bytes)
        partial.headers["Content-Range"] = "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(data.count)"
        partial.headers["Content-Length"] = String(bytes.count)
        return partial
    }
}

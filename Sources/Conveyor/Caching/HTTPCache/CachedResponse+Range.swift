import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension CachedResponse {
    /// The `206 Partial Content` this stored response gives a `Range` request (RFC 9110 §14, RFC
    /// 9111 §3.3–3.4): one satisfiable byte range of a stored complete 200, or one that lies wholly
    /// inside a stored 206's part, with the stored header fields, `Content-Range` and
    /// `Content-Length`. Nil — the request goes on as it would without a range — for several
    /// ranges, an unsatisfiable one, one outside a stored part, or an `If-Range` that does not
    /// name this response's strong `ETag` or `Last-Modified`.
    func partialContent(for request: URLRequest) -> CachedResponse? {
        guard statusCode == 200 || statusCode == 206, method == "GET", let range = request.value(forHTTPHeaderField: "Range") else {
            return nil
        }
        if let condition = request.value(forHTTPHeaderField: "If-Range") {
            let strongETag = headers["ETag"].flatMap { $0.hasPrefix("W/") ? nil : $0 }
            guard condition == strongETag || condition == headers["Last-Modified"] else { return nil }
        }
        // The stored bytes and where they sit in the whole representation.
        let offset: Int
        let total: Int
        if statusCode == 206 {
            guard let part = storedPart else { return nil }
            (offset, total) = (part.offset, part.total)
        } else {
            (offset, total) = (0, data.count)
        }
        guard let bytes = HTTPGrammar.byteRange(range, length: total), bytes.lowerBound >= offset,
            bytes.upperBound <= offset + data.count
        else { return nil }
        var partial = self
        partial.statusCode = 206
        partial.data = data.subdata(in: (bytes.lowerBound - offset)..<(bytes.upperBound - offset))
        partial.headers["Content-Range"] = "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(total)"
        partial.headers["Content-Length"] = String(bytes.count)
        return partial
    }

    /// Where a stored 206's body sits: its single `Content-Range` with a known length, which the
    /// body fills exactly. Nil for anything else (`*` as the length, a body of another size).
    var storedPart: (offset: Int, total: Int)? {
        guard statusCode == 206, let range = HTTPGrammar.contentRange(headers["Content-Range"]), let total = range.total,
            range.last - range.first + 1 == Int64(data.count), total > range.last
        else { return nil }
        return (Int(range.first), Int(total))
    }
}

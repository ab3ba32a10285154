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
        guard let bytes = Self.byteRange(range, length: data.count) else { return nil }
        var partial = self
        partial.statusCode = 206
        partial.data = data.subdata(in: bytes)
        partial.headers["Content-Range"] = "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(data.count)"
        partial.headers["Content-Length"] = String(bytes.count)
        return partial
    }

    /// The one byte range `field` asks of a body of `length` bytes (`bytes=0-99`, `bytes=100-`,
    /// `bytes=-100`), clipped to the body; nil for several ranges or an unsatisfiable one.
    static func byteRange(_ field: String, length: Int) -> Range<Int>? {
        let trimmed = field.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes="), length > 0 else { return nil }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard HTTPGrammar.isDigits(last), let count = Int(last), count > 0 else { return nil }
            return max(0, length - count)..<length
        }
        guard HTTPGrammar.isDigits(first), let start = Int(first), start < length else { return nil }
        if last.isEmpty { return start..<length }
        guard HTTPGrammar.isDigits(last), let end = Int(last), end >= start else { return nil }
        return start..<(min(end, length - 1) + 1)
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension CachedResponse {
    /// The fields a `304 Not Modified` carries over from the response it stands for (RFC 9110
    /// §15.4.5), and `Age`, from which the answer's own `Age` is computed.
    static let notModifiedFieldNames = ["Cache-Control", "Content-Location", "Date", "ETag", "Expires", "Vary", "Age"]

    /// The `304 Not Modified` this stored response gives a request whose own `If-None-Match` or
    /// `If-Modified-Since` evaluates false against it (RFC 9111 §4.3.2): `If-None-Match` wins when
    /// both are sent (RFC 9110 §13.2.2) and matches by weak comparison, `*` anything;
    /// `If-Modified-Since` compares with the stored `Last-Modified`, else `Date`, else the time the
    /// response arrived. Nil — the stored response answers as it is — when the request has no
    /// such condition, the condition is true, or the stored status is not a 2xx (a part included:
    /// conditions apply to the representation, RFC 9110 §13.2.1).
    func notModified(for request: URLRequest) -> CachedResponse? {
        guard (200..<300).contains(statusCode), statusCode != 206 else { return nil }
        let method = (request.httpMethod ?? "GET").uppercased()
        guard method == "GET" || method == "HEAD" else { return nil }
        if let field = request.value(forHTTPHeaderField: "If-None-Match") {
            if field.trimmingCharacters(in: .whitespaces) != "*" {
                guard let etag = headers["ETag"], let tags = HTTPGrammar.entityTags(field),
                    tags.contains(where: { HTTPGrammar.weaklyMatch($0, etag) })
                else { return nil }
            }
        } else if let field = request.value(forHTTPHeaderField: "If-Modified-Since") {
            // An invalid date is ignored (RFC 9110 §13.1.3): the stored response answers.
            guard let since = HTTPDate.parse(field) else { return nil }
            let modified = HTTPDate.parse(headers["Last-Modified"]) ?? HTTPDate.parse(headers["Date"]) ?? responseDate
            guard modified <= since else { return nil }
        } else {
            return nil
        }
        var answer = self
        answer.statusCode = 304
        answer.data = Data()
        answer.headers = [:]
        for name in Self.notModifiedFieldNames {
            if let value = headers[name] { answer.headers[name] = value }
        }
        return answer
    }

    /// Whether a `304` the server sent describes this stored response, so that it is freshened
    /// with it (RFC 9111 §4.3.4): the 304's entity tag matches the stored one — by strong
    /// comparison when the 304's tag is strong (a stored `W/"v1"` is not `"v1"`), by weak
    /// comparison when it is weak — or, without a tag, its `Last-Modified` is the stored one, or
    /// neither carries a validator.
    func isDescribed(by notModified: HTTPResponseHead) -> Bool {
        if let etag = notModified.value(forHTTPHeaderField: "ETag") {
            guard let stored = headers["ETag"] else { return false }
            return etag.hasPrefix("W/") ? HTTPGrammar.weaklyMatch(stored, etag) : HTTPGrammar.stronglyMatch(stored, etag)
        }
        if let modified = notModified.value(forHTTPHeaderField: "Last-Modified") {
            return headers["Last-Modified"] == modified
        }
        return headers["ETag"] == nil && headers["Last-Modified"] == nil
    }
}

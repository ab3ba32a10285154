import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLRequest {
    /// Sets (or with nil removes) a header field without `URLRequest.setValue(_:forHTTPHeaderField:)`:
    /// use it in ``RequestAdapter``s, request overrides and anything else that builds requests
    /// on several threads at once.
    ///
    /// corelibs Foundation's `setValue(_:forHTTPHeaderField:)` title-cases the name with
    /// `String.capitalized`, which goes through an ICU break iterator that is not thread-safe:
    /// building requests on several threads at once crashed the process here (SIGILL inside
    /// `String._capitalized()`, 200 concurrent GETs). Editing `allHTTPHeaderFields` directly
    /// avoids the call; names compare case-insensitively (a field of the same name in another
    /// case is replaced) and keep the caller's spelling.
    ///
    /// ```swift
    /// var request = URLRequest(url: URL(string: "https://api.example.com/items")!)
    /// request.setHeader(UUID().uuidString, for: "X-Request-ID")
    /// ```
    /// - Parameters:
    ///   - value: The field's value; nil removes the field.
    ///   - name: The field's name.
    public mutating func setHeader(_ value: String?, for name: String) {
        var fields = allHTTPHeaderFields ?? [:]
        if let existing = fields.keys.first(where: { $0.equalsIgnoringASCIICase(name) }) {
            fields.removeValue(forKey: existing)
        }
        fields[name] = value
        allHTTPHeaderFields = fields
    }

    /// Sets several header fields at once (see ``setHeader(_:for:)``).
    mutating func setHeaders(_ headers: HTTPHeaders) {
        var fields = allHTTPHeaderFields ?? [:]
        for (name, value) in headers {
            if let existing = fields.keys.first(where: { $0.equalsIgnoringASCIICase(name) }) {
                fields.removeValue(forKey: existing)
            }
            fields[name] = value
        }
        allHTTPHeaderFields = fields
    }
}

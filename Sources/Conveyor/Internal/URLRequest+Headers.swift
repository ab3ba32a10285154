import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLRequest {
    /// Sets (or with nil removes) a header field without `URLRequest.setValue(_:forHTTPHeaderField:)`.
    ///
    /// corelibs Foundation's `setValue(_:forHTTPHeaderField:)` title-cases the name with
    /// `String.capitalized`, which goes through an ICU break iterator that is not thread-safe:
    /// building requests on several threads at once crashed the process here (SIGILL inside
    /// `String._capitalized()`, 200 concurrent GETs). Editing `allHTTPHeaderFields` directly
    /// avoids the call; names compare case-insensitively and keep the caller's spelling.
    mutating func setHeader(_ value: String?, for name: String) {
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

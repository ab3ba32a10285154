import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPURLResponse {
    /// The header fields as ``HTTPHeaders`` (string names and values only, as HTTP has).
    var headerFields: HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            headers[name] = value
        }
        return headers
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Encodes parameters as a query string: into the URL for `GET`, `HEAD` and `DELETE`, into an
/// `application/x-www-form-urlencoded; charset=utf-8` body for every other method.
public struct FormURLEncodedRequestSerializer: RequestSerializer {
    /// The methods whose parameters go into the URL. Default `GET`, `HEAD`, `DELETE`.
    public var methodsEncodingParametersInURI: Set<HTTPMethod>
    /// The query string rules.
    public var encoder: QueryStringEncoder

    /// Creates a serializer.
    /// - Parameters:
    ///   - methodsEncodingParametersInURI: Methods whose parameters go into the URL; default
    ///     `GET`, `HEAD`, `DELETE`.
    ///   - encoder: The query string rules; default ``QueryStringEncoder/init(arrayEncoding:boolEncoding:spaceEncoding:)``.
    public init(
        methodsEncodingParametersInURI: Set<HTTPMethod> = [.get, .head, .delete],
        encoder: QueryStringEncoder = QueryStringEncoder()
    ) {
        self.methodsEncodingParametersInURI = methodsEncodingParametersInURI
        self.encoder = encoder
    }

    /// Encodes `parameters` into the URL or the body, as the method decides.
    /// - Parameters:
    ///   - request: The request; its `httpMethod` decides where parameters go (nil means GET).
    ///   - parameters: The parameters; nil or empty adds nothing.
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)``.
    public func serialize(_ request: URLRequest, parameters: Parameters?) throws -> URLRequest {
        guard let parameters, !parameters.isEmpty else { return request }
        var request = request
        let query = try encoder.encode(parameters)
        if request.methodIsIn(methodsEncodingParametersInURI) {
            guard let url = request.url else { throw ConveyorError.parameterEncodingFailed(reason: .missingURL) }
            var text = url.absoluteString
            // A path that already has a query gets `&`, never a second `?`; a fragment stays last.
            var fragment = ""
            if let hash = text.firstIndex(of: "#") {
                fragment = String(text[hash...])
                text = String(text[..<hash])
            }
            let separator = text.contains("?") ? (text.hasSuffix("?") || text.hasSuffix("&") ? "" : "&") : "?"
            // The brackets keys keep are not valid in a URL's query: swift-foundation would
            // then re-encode the whole string, `%` included. Values have none left to escape.
            let urlQuery = query.replacingOccurrences(of: "[", with: "%5B").replacingOccurrences(of: "]", with: "%5D")
            guard let encoded = URL(string: text + separator + urlQuery + fragment) else {
                throw ConveyorError.parameterEncodingFailed(reason: .missingURL)
            }
            request.url = encoded
        } else {
            request.setContentTypeIfMissing("application/x-www-form-urlencoded; charset=utf-8")
            request.httpBody = Data(query.utf8)
        }
        return request
    }
}

extension RequestSerializer where Self == FormURLEncodedRequestSerializer {
    /// Query string in the URL for GET/HEAD/DELETE, form body otherwise. The default.
    public static var formURLEncoded: FormURLEncodedRequestSerializer { FormURLEncodedRequestSerializer() }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response's status line and header fields, as Conveyor received them.
///
/// Serializers, validation, the cache and the logger read a response through this type, which
/// the curl transport fills straight from the bytes it parsed. Foundation's `HTTPURLResponse` is
/// built only when something asks for it (``urlResponse``, ``HTTPRequestOperation/response``,
/// ``HTTPResponse/response``), once: on Linux, building one costs more than the rest of a small
/// response's handling together (corelibs capitalises and compares every field name).
///
/// The members a response serializer usually reads have `HTTPURLResponse`'s names:
/// ``statusCode``, ``url``, ``value(forHTTPHeaderField:)``, ``mimeType``, ``textEncodingName``,
/// ``expectedContentLength``.
public final class HTTPResponseHead: Sendable, CustomStringConvertible {
    // Sendable, checked by the compiler: the stored properties are immutable, except the Foundation
    // response and header fields built on first use, which sit behind one Lock (`built`).

    /// The URL the response came from.
    public let url: URL
    /// The status code.
    public let statusCode: Int
    /// The protocol of the status line: `HTTP/1.1`, `HTTP/2`, `HTTP/1.0`. A head wrapping a
    /// Foundation response says `HTTP/1.1` (Foundation does not tell; ``TransferMetrics`` does).
    public let httpVersion: String
    /// The body's length from `Content-Length`, or -1 when the head does not say (or says
    /// something that is not one length). Read once: the operation consults it for every chunk.
    public let expectedContentLength: Int64

    /// The fields as parsed (repeated fields joined with ", " under the first spelling of the
    /// name); nil for a head that wraps a Foundation response.
    private let parsedHeaders: HTTPHeaders?

    private struct Built {
        var response: HTTPURLResponse?
        var headers: HTTPHeaders?
    }
    private let built: Lock<Built>

    /// Creates a head from its parts.
    /// - Parameters:
    ///   - url: The URL the response came from.
    ///   - statusCode: The status code.
    ///   - httpVersion: The protocol of the status line; default `HTTP/1.1`.
    ///   - headers: The header fields, one value per name (join repeated fields with ", ").
    public init(url: URL, statusCode: Int, httpVersion: String = "HTTP/1.1", headers: HTTPHeaders) {
        self.url = url
        self.statusCode = statusCode
        self.httpVersion = httpVersion
        parsedHeaders = headers
        // The same reading as the operation's check of the field (RFC 9112 §6.3).
        expectedContentLength = headers["Content-Length"].flatMap(HTTPGrammar.contentLength) ?? -1
        built = Lock(Built())
    }

    /// Wraps a Foundation response (what `URLSession` delivers); its fields are read from it.
    /// - Parameter response: The response.
    public init(_ response: HTTPURLResponse) {
        url = response.url ?? URL(fileURLWithPath: "/")
        statusCode = response.statusCode
        httpVersion = "HTTP/1.1"
        expectedContentLength = response.expectedContentLength
        parsedHeaders = nil
        built = Lock(Built(response: response))
    }

    /// The header fields, in the order received.
    public var headers: HTTPHeaders {
        if let parsedHeaders { return parsedHeaders }
        return built.withLock { built in
            if let headers = built.headers { return headers }
            var headers = HTTPHeaders()
            for (name, value) in built.response?.allHeaderFields ?? [:] {
                guard let name = name as? String, let value = value as? String else { continue }
                headers[name] = value
            }
            built.headers = headers
            return headers
        }
    }

    /// The value of a header field, its name matched case-insensitively.
    /// - Parameter name: The field name.
    /// - Returns: The value (repeated fields joined with ", "), or nil.
    public func value(forHTTPHeaderField name: String) -> String? {
        if let parsedHeaders { return parsedHeaders[name] }
        return urlResponse.value(forHTTPHeaderField: name)
    }

    /// The MIME type of `Content-Type`, lower-case, without parameters; nil without one.
    ///
    /// When a server sends the field twice (httpbin's `/response-headers` does, and so do
    /// misconfigured proxies) the values arrive joined with a comma; like browsers, Conveyor
    /// uses the last one. Quoted parameter values are read as RFC 9110 says (a comma or
    /// semicolon inside quotes is text); nil too when the field is not a media type.
    public var mimeType: String? { contentType?.essence }

    /// The `charset` parameter of `Content-Type` (unquoted), or nil.
    public var textEncodingName: String? {
        guard let value = contentType?.parameter("charset"), !value.isEmpty else { return nil }
        return value
    }

    /// The `Content-Type` value that counts: the last valid one of several joined with commas
    /// (see ``mimeType``).
    private var contentType: MediaType? {
        value(forHTTPHeaderField: "Content-Type").flatMap(MediaType.parse(field:))
    }

    /// The head as a Foundation response, built on first use and kept.
    public var urlResponse: HTTPURLResponse {
        built.withLock { built in
            if let response = built.response { return response }
            let fields = parsedHeaders?.dictionary ?? [:]
            let response =
                HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: fields)
                ?? HTTPURLResponse(url: url, statusCode: 500, httpVersion: httpVersion, headerFields: fields)!
            built.response = response
            return response
        }
    }

    /// The status line and fields, one per line.
    public var description: String {
        "\(httpVersion) \(statusCode) \(HTTPURLResponse.localizedString(forStatusCode: statusCode))\n\(headers)"
    }
}

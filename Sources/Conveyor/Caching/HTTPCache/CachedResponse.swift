import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response as ``HTTPCache`` stores it: status, headers and the decoded body, with the
/// times RFC 9111 needs to compute its age.
///
/// A ``HTTPRequestOperation/setCacheResponseBlock(_:)`` block receives one before it is
/// stored and may change it (drop a header, shorten its lifetime) or refuse it.
public struct CachedResponse: Sendable, Equatable {
    /// The URL of the request that produced the response (query included).
    public let url: URL
    /// The request method it answers: `GET` or `HEAD`.
    public let method: String
    /// The response's status code.
    public var statusCode: Int
    /// The response's header fields. The body is stored decoded, so `Content-Encoding` is
    /// removed and `Content-Length` is the stored body's length.
    public var headers: HTTPHeaders
    /// The response body (empty for a `HEAD` response).
    public var data: Data
    /// The request header values named by the response's `Vary`, as sent (absent ones omitted).
    public var varyingRequestHeaders: [String: String]
    /// When the request that produced the response was sent.
    public var requestDate: Date
    /// When the response arrived (or was last revalidated with a 304).
    public var responseDate: Date

    /// Creates an entry.
    /// - Parameters:
    ///   - url: The request URL.
    ///   - method: `GET` or `HEAD`.
    ///   - statusCode: The status code.
    ///   - headers: The response headers.
    ///   - data: The decoded body.
    ///   - varyingRequestHeaders: The request values of the headers the response's `Vary` names.
    ///   - requestDate: When the request was sent; default now.
    ///   - responseDate: When the response arrived; default now.
    public init(
        url: URL, method: String = "GET", statusCode: Int, headers: HTTPHeaders, data: Data,
        varyingRequestHeaders: [String: String] = [:], requestDate: Date = Date(), responseDate: Date = Date()
    ) {
        self.url = url
        self.method = method.uppercased()
        self.statusCode = statusCode
        self.headers = headers
        self.data = data
        self.varyingRequestHeaders = varyingRequestHeaders
        self.requestDate = requestDate
        self.responseDate = responseDate
    }

    /// The entry as the response head a caller sees, with an `Age` header as RFC 9111 §5.1
    /// asks of a cache.
    /// - Parameter now: The time to compute the age at; default now.
    /// - Returns: The response head; nil for a status code HTTP does not have (treated as a miss).
    func httpResponse(at now: Date = Date()) -> HTTPResponseHead? {
        guard (100...999).contains(statusCode) else { return nil }
        var fields = headers
        fields["Age"] = String(Seconds.wholeSeconds(currentAge(at: now)))
        return HTTPResponseHead(url: url, statusCode: statusCode, headers: fields)
    }

    /// The cache key: method and full URL, query included (corelibs `URLCache` ignores the
    /// query, so `/search?q=a` would answer `/search?q=b`), its origin spelled as ``Origin`` reads
    /// it — `HTTP://LOCALHOST:80/x` and `http://localhost/x` are one resource (RFC 9111 §4.4).
    static func key(method: String, url: URL) -> String {
        "\(method.uppercased()) \(Origin.canonicalString(of: url))"
    }

    /// The key this entry is stored under.
    var key: String { Self.key(method: method, url: url) }

    /// What the entry holds in memory, for the memory cache's limit: the body, the name and
    /// value of every header field and `Vary` value, the URL and method, plus ``fieldOverhead``
    /// per field and ``entryOverhead`` per entry. Counting the body alone let 3,000 entries
    /// with 48 kB of header fields each grow a 1 MB cache to 100 MB (issue 37).
    var memoryCost: Int {
        var cost = Self.entryOverhead + data.count + url.absoluteString.utf8.count + method.utf8.count
        for field in headers { cost += field.name.utf8.count + field.value.utf8.count + Self.fieldOverhead }
        for (name, value) in varyingRequestHeaders { cost += name.utf8.count + value.utf8.count + Self.fieldOverhead }
        return cost
    }

    /// Per field: the array slot of a name and value (32 bytes) and the heap headers of two
    /// strings too long to be stored inline (16 each, with malloc's rounding).
    static let fieldOverhead = 64
    /// Per entry: the value itself, its `URL` and `Data` objects, the dates, and the LRU list's node.
    static let entryOverhead = 512
}

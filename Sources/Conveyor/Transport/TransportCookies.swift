import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cookies for both transports, through the session configuration's `HTTPCookieStorage`.
///
/// Conveyor handles cookies itself rather than leaving them to URLSession, so both transports
/// behave alike and as RFC 6265 says. corelibs' `HTTPCookie` ignores `Max-Age` and cannot read
/// the `Expires` dates servers send (`Thu, 01-Jan-1970 00:00:00 GMT`), so its storage keeps a
/// cookie the server deletes and sends it forever. Here the expiry is read from the
/// attributes (`Max-Age` first, RFC 6265 §5.3), an expired cookie deletes the stored one, and
/// expired cookies are never sent.
struct TransportCookies: Sendable {
    // Sendable, checked by the compiler: `HTTPCookieStorage` is Sendable (thread-safe) in
    // Foundation on every platform; the rest are values.

    let storage: HTTPCookieStorage?
    let acceptPolicy: HTTPCookie.AcceptPolicy

    /// Takes the storage and policy of `configuration`; no storage when it does not set cookies.
    init(_ configuration: URLSessionConfiguration) {
        storage = configuration.httpShouldSetCookies ? configuration.httpCookieStorage : nil
        acceptPolicy = configuration.httpCookieAcceptPolicy
    }

    /// Adds the stored cookies to `request` as its `Cookie` header, checked like every header
    /// that leaves (both transports and the cache call it, so a request is stamped once and the
    /// cache decides on it as sent).
    ///
    /// The cookie values are credentials Conveyor adds: the caller pins them for masking
    /// (``SentSecrets``) for as long as the exchange runs, in its ``AttemptRelease``, once the
    /// request is sure to be sent.
    /// - Returns: The values to pin (none when no cookie was stamped).
    /// - Throws: The error that refuses the request when a stored cookie could split the head.
    func stamp(_ request: inout URLRequest) throws(ConveyorError) -> [String] {
        guard let cookie = header(for: request) else { return [] }
        guard HTTPGrammar.isValidField(name: "Cookie", value: cookie) else { throw .invalidHeader(name: "Cookie") }
        request.setHeader(cookie, for: "Cookie")
        return SentSecrets.values(ofHeaders: [(key: "Cookie", value: cookie)])
    }

    /// The `Cookie` header for `request`, or nil (none stored, cookies off for the request, or
    /// the request sets its own).
    func header(for request: URLRequest) -> String? {
        guard let storage, request.httpShouldHandleCookies, let url = request.url,
            !(request.allHTTPHeaderFields ?? [:]).keys.contains(where: { $0.equalsIgnoringASCIICase("Cookie") }),
            let cookies = storage.cookies(for: url), !cookies.isEmpty
        else { return nil }
        let now = Date()
        var live: [HTTPCookie] = []
        for cookie in cookies {
            if cookie.isExpired(at: now) { storage.deleteCookie(cookie) } else { live.append(cookie) }
        }
        return live.isEmpty ? nil : HTTPCookie.requestHeaderFields(with: live)["Cookie"]
    }

    /// Stores the cookies of `lines` (`Set-Cookie` values, one cookie list each) received for
    /// `request` from `url`; an already expired cookie deletes the stored one of that name,
    /// domain and path.
    func store(_ lines: [String], from url: URL, for request: URLRequest) {
        guard let storage, !lines.isEmpty, request.httpShouldHandleCookies, accepts(from: url, for: request) else { return }
        let now = Date()
        for text in lines.flatMap(Self.split) {
            guard let parsed = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": text], for: url).first else { continue }
            for stored in storage.cookies ?? []
            where stored.name == parsed.name && stored.domain == parsed.domain && stored.path == parsed.path {
                storage.deleteCookie(stored)
            }
            let expiry = Self.expiry(of: text, now: now) ?? parsed.expiresDate
            if let expiry, expiry <= now { continue }
            var cookie = parsed
            if let expiry, var properties = parsed.properties {
                properties[.expires] = expiry
                properties[.maximumAge] = nil
                cookie = HTTPCookie(properties: properties) ?? parsed
            }
            storage.setCookie(cookie)
        }
    }

    /// Splits a `Set-Cookie` value that may hold several cookies joined with commas (as
    /// URLSession reports repeated fields) without splitting inside an `Expires` date.
    static func split(_ value: String) -> [String] {
        var cookies: [String] = []
        for piece in value.split(separator: ",", omittingEmptySubsequences: false) {
            let lastAttribute = cookies.last?.split(separator: ";").last?.trimmingPrefix(" ") ?? ""
            if let last = cookies.last, lastAttribute.lowercased().hasPrefix("expires="), !lastAttribute.contains(",") {
                cookies[cookies.count - 1] = last + "," + piece
            } else {
                cookies.append(String(piece).trimmingPrefix(" ").description)
            }
        }
        return cookies.filter { !$0.isEmpty }
    }

    /// When the cookie `text` expires by its own attributes: `Max-Age` (0 or less: already),
    /// else `Expires`; nil for a session cookie.
    static func expiry(of text: String, now: Date) -> Date? {
        var expires: Date?
        for attribute in text.split(separator: ";").dropFirst() {
            let parts = attribute.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            let name = parts[0].lowercased()
            if name == "max-age", let seconds = Int(parts[1]) {
                return seconds <= 0 ? .distantPast : now.addingTimeInterval(TimeInterval(seconds))
            }
            if name == "expires" { expires = cookieDate(parts[1]) }
        }
        return expires
    }

    /// Reads the date forms cookies use: RFC 1123 (`Thu, 01 Jan 1970 00:00:00 GMT`) and the
    /// Netscape form with dashes and two- or four-digit years (`Thu, 01-Jan-70 00:00:00 GMT`).
    static func cookieDate(_ text: String) -> Date? {
        var parts = text.replacingOccurrences(of: "-", with: " ").split(separator: " ").map(String.init)
        guard parts.count == 6 else { return nil }
        if let year = Int(parts[3]), year < 100 { parts[3] = String(year >= 70 ? 1900 + year : 2000 + year) }
        return HTTPDate.parse(parts.joined(separator: " "))
    }

    /// Stores the cookies of a response head as URLSession reports it (repeated `Set-Cookie`
    /// fields joined into one, which Foundation's parser splits again).
    func store(from response: HTTPURLResponse, for request: URLRequest) {
        guard storage != nil, let url = response.url ?? request.url else { return }
        let lines = response.allHeaderFields.compactMap { key, value -> String? in
            guard let name = key as? String, name.equalsIgnoringASCIICase("Set-Cookie") else { return nil }
            return value as? String
        }
        store(lines, from: url, for: request)
    }

    private func accepts(from url: URL, for request: URLRequest) -> Bool {
        switch acceptPolicy {
        case .never: return false
        case .onlyFromMainDocumentDomain:
            guard let main = request.mainDocumentURL?.host, let host = url.host else { return true }
            return host == main || host.hasSuffix("." + main)
        default: return true
        }
    }
}

extension HTTPCookie {
    fileprivate func isExpired(at now: Date) -> Bool {
        expiresDate.map { $0 <= now } ?? false
    }
}

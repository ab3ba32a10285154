import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the logger and ``HTTPRequestOperation/cURLDescription`` hide: header values, query
/// parameters and form/JSON body fields with sensitive names print as `<redacted>`, and — by
/// value, wherever they appear — the credentials Conveyor has sent (``masksSentValues``).
public struct Redaction: Sendable {
    /// The text printed instead of a secret.
    public static let placeholder = "<redacted>"

    /// Header names (case-insensitive). Default the credential headers
    /// (``HTTPHeaders/credentialNames``: `Authorization`, `Proxy-Authorization`, `Cookie`,
    /// `X-API-Key`, `X-Auth-Token`) and the response's `Set-Cookie`.
    public var headerNames: Set<String>
    /// Query parameter and body field names (case-insensitive). Default `token`,
    /// `access_token`, `refresh_token`, `api_key`, `apikey`, `password`, `secret`, `client_secret`.
    public var parameterNames: Set<String>
    /// Whether every credential value Conveyor has sent — credential header values, the token
    /// of `Bearer`, the `user:password` of Basic (and its base64), cookie values, query and form
    /// values with secret names, the URL's user information, challenge answers — is hidden
    /// wherever it appears in the text: a response body that echoes it, a URL nested in a query
    /// parameter; also escaped (percent-encoded in either case, form-encoded with `+`, JSON- or
    /// HTML-escaped). A value shorter than 20 bytes is hidden only where it stands as a whole
    /// token — the characters just before and after it are not letters or digits — so a short
    /// token `fresh` leaves the word `refresh` alone; longer values are hidden wherever they
    /// appear. Values of 4 or more characters are remembered: every value a request in flight
    /// carries and every credential a client is configured with, plus the 256 most recently
    /// used others. Default true; false in ``none``.
    public var masksSentValues = true

    /// Creates a redaction.
    /// - Parameters:
    ///   - headerNames: Header names to hide; default ``HTTPHeaders/credentialNames`` and `Set-Cookie`.
    ///   - parameterNames: Query and body field names to hide; default common secret names.
    public init(
        headerNames: Set<String> = HTTPHeaders.credentialNames.union(["Set-Cookie"]),
        parameterNames: Set<String> = [
            "token", "access_token", "refresh_token", "api_key", "apikey", "password", "secret", "client_secret",
        ]
    ) {
        self.headerNames = Set(headerNames.map { $0.lowercased() })
        self.parameterNames = Set(parameterNames.map { $0.lowercased() })
    }

    /// Hides nothing. For local debugging only: logs then contain credentials.
    public static let none: Redaction = {
        var redaction = Redaction(headerNames: [], parameterNames: [])
        redaction.masksSentValues = false
        return redaction
    }()

    /// `text` with the credential values Conveyor has sent hidden (see ``masksSentValues``):
    /// the last pass over every text that leaves the library.
    /// - Parameter text: A log line, a cURL command, an error description.
    /// - Returns: The text to print.
    public func masked(_ text: String) -> String {
        masksSentValues ? SentSecrets.shared.mask(text).text : text
    }

    /// `text` masked as ``masked(_:)`` does, then cut after `maximumBytes` bytes of UTF-8 (at
    /// a character boundary): masking first, so a value across the cut is hidden whole, never
    /// printed in part.
    /// - Returns: The text, and whether it was cut.
    func masked(_ text: String, maximumBytes: Int) -> (text: String, truncated: Bool) {
        if masksSentValues { return SentSecrets.shared.mask(text, maximumBytes: maximumBytes) }
        guard text.utf8.count > maximumBytes else { return (text, false) }
        return (String(decoding: Data(text.utf8.prefix(max(maximumBytes, 0))), as: UTF8.self), true)
    }

    /// The value to print for a header.
    /// - Parameters:
    ///   - value: The header's value.
    ///   - name: The header's name.
    /// - Returns: The value, or ``placeholder``.
    public func header(_ value: String, named name: String) -> String {
        let lowered = name.lowercased()
        if headerNames.contains(lowered) { return Self.placeholder }
        // Headers whose value is a URL carry query parameters too (`Location: …?access_token=…`).
        if Self.urlHeaderNames.contains(lowered) { return location(value) }
        return value
    }

    /// What a query value may hold unencoded (the placeholder's `<` and `>` are encoded).
    private static let queryValueCharacters = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+#<>"))

    /// Response headers whose value is a URL, possibly relative.
    static let urlHeaderNames: Set<String> = ["location", "content-location", "refresh", "link"]

    /// A URL as a server wrote it (`Location`, possibly relative or unparseable) with its
    /// password and sensitive query values hidden.
    /// - Parameter text: The URL text.
    /// - Returns: The text to print.
    public func location(_ text: String) -> String {
        if let url = URL(string: text), url.scheme != nil, url.host != nil { return self.url(url) }
        return scrub(text)
    }

    /// Whether a query or form field name is secret: its own name, or for a nested name
    /// (`user[password]`, `user%5Bpassword%5D`, `tokens[]`) its innermost key.
    func isSecret(field: String) -> Bool {
        let name = (field.removingPercentEncoding ?? field).lowercased()
        if parameterNames.contains(name) { return true }
        let keys = name.split(whereSeparator: { $0 == "[" || $0 == "]" })
        return keys.last.map { parameterNames.contains(String($0)) } ?? false
    }

    /// The URL with sensitive query parameter values replaced, and any user and password too (a
    /// user name is half a credential: found by the independent attack, it was printed whole).
    /// - Parameter url: The URL.
    /// - Returns: The text to print.
    public func url(_ url: URL?) -> String {
        guard let url else { return "(no URL)" }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url.absoluteString }
        if components.user != nil { components.user = Self.placeholder }
        if components.password != nil { components.password = Self.placeholder }
        if let items = components.percentEncodedQueryItems {
            var changed = false
            let redacted = items.map { item -> URLQueryItem in
                guard let value = item.value else { return item }
                if isSecret(field: item.name) {
                    changed = true
                    return URLQueryItem(name: item.name, value: "%3Credacted%3E")
                }
                // A value that is itself a URL or a query (`to=ftp://x/?token=…`) carries
                // parameters of its own.
                guard let decoded = value.removingPercentEncoding, decoded.contains("=") else { return item }
                let scrubbed = scrub(decoded)
                guard scrubbed != decoded else { return item }
                changed = true
                return URLQueryItem(
                    name: item.name, value: scrubbed.addingPercentEncoding(withAllowedCharacters: Self.queryValueCharacters))
            }
            if changed { components.percentEncodedQueryItems = redacted }
        }
        return components.string ?? url.absoluteString
    }

    /// A request or response body as text with sensitive form or JSON fields hidden.
    /// - Parameters:
    ///   - text: The decoded body.
    ///   - contentType: Its MIME type, which decides how fields are found.
    /// - Returns: The text to print.
    public func body(_ text: String, contentType: String?) -> String {
        guard !parameterNames.isEmpty || !headerNames.isEmpty else { return text }
        return scrub(structured(text, contentType: contentType))
    }

    private func structured(_ text: String, contentType: String?) -> String {
        let type = contentType?.lowercased() ?? ""
        if type.contains("json"), let data = text.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        {
            let redacted = redactJSON(object)
            if let output = try? JSONSerialization.data(
                withJSONObject: redacted, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
            {
                return String(decoding: output, as: UTF8.self)
            }
        }
        if type.hasPrefix("application/x-www-form-urlencoded") {
            return text.split(separator: "&", omittingEmptySubsequences: false).map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return isSecret(field: String(parts[0])) && parts.count == 2 ? "\(parts[0])=%3Credacted%3E" : String(pair)
            }.joined(separator: "&")
        }
        return text
    }

    /// A last pass over any text: `name=value` (also a nested form name, `user[password]=…`),
    /// `"name": "value"` (also inside escaped JSON strings) and header lines (`Name: value`) for
    /// every secret name. Echo services and error pages repeat requests in their bodies, and a
    /// structured pass alone would miss those copies.
    func scrub(_ text: String) -> String {
        let names = (parameterNames.union(headerNames)).map { NSRegularExpression.escapedPattern(for: $0) }
        guard !names.isEmpty else { return text }
        let alternatives = names.joined(separator: "|")
        let patterns = [
            #"(?i)((?:^|[?&\s])(?:[^\s=&?"']*?(?:\[|%5B))?(?:"# + alternatives + #")(?:\]|%5D)?=)[^&\s"'\\]+"#,
            #"(?i)(\\?"(?:[^"\\\s]*?\[)?(?:"# + alternatives + #")\]?\\?"\s*:\s*\\?")(?:[^"\\]|\\[^"])*"#,
            #"(?im)((?:^|[\r\n])[ \t]*(?:"# + alternatives + #")[ \t]*:[ \t]*)[^\r\n]*"#,
        ]
        var result = text
        for pattern in patterns {
            guard let expression = try? NSRegularExpression(pattern: pattern) else { continue }
            let range = NSRange(result.startIndex..., in: result)
            result = expression.stringByReplacingMatches(in: result, range: range, withTemplate: "$1\(Self.placeholder)")
        }
        return result
    }

    private func redactJSON(_ object: Any) -> Any {
        if let dictionary = object as? [String: Any] {
            var result: [String: Any] = [:]
            for (key, value) in dictionary {
                let secret = isSecret(field: key) || headerNames.contains(key.lowercased())
                result[key] = secret ? Self.placeholder : redactJSON(value)
            }
            return result
        }
        if let array = object as? [Any] { return array.map(redactJSON) }
        return object
    }
}

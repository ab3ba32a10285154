import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The pieces of HTTP syntax (RFC 9110) Conveyor checks and reads, in one place: tokens (methods,
/// field names, media types), the fields every header that leaves must pass, `Content-Length`,
/// `Content-Range`, `Range` and entity tags. Every caller asks here; none re-derives a rule.
///
/// Bytes, not a `CharacterSet` over unicode scalars: these run for every request (the header
/// check was 1.6 µs of a sequential request in a profile). Any non-ASCII byte is not a `tchar`.
enum HTTPGrammar {
    // MARK: - Characters

    /// Whether `bytes` is one or more ASCII digits (RFC 5234 `DIGIT`): no sign, space, fraction
    /// or exponent.
    static func isDigits(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Whether `text` is one or more ASCII digits.
    static func isDigits(_ text: some StringProtocol) -> Bool {
        isDigits(text.utf8)
    }

    /// Whether `text` is an RFC 9110 token (§5.6.2): one or more `tchar`s.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    /// RFC 9110 §5.6.2 `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    // MARK: - Header fields

    /// The one header check every header that leaves passes, whatever its source: the request's
    /// own (in `HTTPRequestOperation.send` and the outbox's `send`), the session's additional
    /// headers (in the transports, which add them) and stored cookies (``TransportCookies/stamp(_:)``).
    /// - Returns: The first name that is not a token, or whose value holds CR, LF or NUL.
    static func firstInvalidFieldName(in fields: some Sequence<(String, String)>) -> String? {
        for (name, value) in fields where !isValidField(name: name, value: value) { return name }
        return nil
    }

    /// The first of `fields` whose name is not a token or whose value holds CR, LF or NUL.
    static func firstInvalidFieldName(in fields: [String: String]) -> String? {
        firstInvalidFieldName(in: fields.lazy.map { ($0.key, $0.value) })
    }

    /// The first header of `request` whose name is not a token or whose value holds CR, LF or NUL.
    static func firstInvalidFieldName(in request: URLRequest) -> String? {
        firstInvalidFieldName(in: request.allHTTPHeaderFields ?? [:])
    }

    /// Whether `name: value` can go on the wire as one header line: a token name, and a value
    /// that cannot end the line early (no CR, LF or NUL).
    static func isValidField(name: String, value: String) -> Bool {
        isToken(name) && !value.utf8.contains { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") || $0 == 0 }
    }

    // MARK: - Framing

    /// The length a `Content-Length` field value states (RFC 9110 §8.6): one decimal number, or a
    /// list of the same number repeated (the field sent twice, joined by the transport); nil for
    /// anything else — differing values, signs, spaces inside, or a number past `Int64`.
    static func contentLength(_ value: String) -> Int64? {
        // One plain number, the usual case on every response: no splitting or trimming.
        if isDigits(value) { return Int64(value) }
        var length: Int64?
        for part in value.split(separator: ",", omittingEmptySubsequences: false) {
            let digits = part.trimmingCharacters(in: .whitespaces)
            guard isDigits(digits), let number = Int64(digits), length == nil || length == number else { return nil }
            length = number
        }
        return length
    }

    /// `Content-Range: bytes first-last/total` (RFC 9110 §14.4), `total` nil for `*`; nil when
    /// the value is missing or not one satisfied byte range with `first <= last < total`.
    static func contentRange(_ field: String?) -> (first: Int64, last: Int64, total: Int64?)? {
        guard let value = field?.trimmingCharacters(in: .whitespaces), value.lowercased().hasPrefix("bytes ") else { return nil }
        let parts = value.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        func number(_ text: Substring) -> Int64? { isDigits(text) ? Int64(text) : nil }
        guard bounds.count == 2, let first = number(bounds[0]), let last = number(bounds[1]), first <= last else { return nil }
        if parts[1] == "*" { return (first, last, nil) }
        guard let total = number(parts[1]), last < total else { return nil }
        return (first, last, total)
    }

    /// The one byte range a `Range` field (RFC 9110 §14.2) asks of a body of `length` bytes
    /// (`bytes=0-99`, `bytes=100-`, `bytes=-100`), clipped to the body; nil for several ranges or
    /// an unsatisfiable one.
    static func byteRange(_ field: String, length: Int) -> Range<Int>? {
        let trimmed = field.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes="), length > 0 else { return nil }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard isDigits(last), let count = Int(last), count > 0 else { return nil }
            return max(0, length - count)..<length
        }
        guard isDigits(first), let start = Int(first), start < length else { return nil }
        if last.isEmpty { return start..<length }
        guard isDigits(last), let end = Int(last), end >= start else { return nil }
        return start..<(min(end, length - 1) + 1)
    }

    // MARK: - Entity tags

    /// The entity tags of an `If-None-Match` or `If-Match` list (RFC 9110 §8.8.3, §13.1.1), as
    /// written (`W/` kept); nil for `*`, and for a value that is not a list of entity tags —
    /// `etagc` allows commas inside the quotes, so the list is read tag by tag, never split.
    static func entityTags(_ field: String) -> [Substring]? {
        let value = Substring(field)
        if value.trimmingCharacters(in: .whitespaces) == "*" { return nil }
        var tags: [Substring] = []
        var index = value.startIndex
        func skipSeparators() {
            while index < value.endIndex, value[index] == " " || value[index] == "\t" || value[index] == "," {
                index = value.index(after: index)
            }
        }
        skipSeparators()
        while index < value.endIndex {
            let start = index
            if value[index...].hasPrefix("W/") { index = value.index(index, offsetBy: 2) }
            guard index < value.endIndex, value[index] == "\"" else { return nil }
            guard let close = value[value.index(after: index)...].firstIndex(of: "\"") else { return nil }
            index = value.index(after: close)
            tags.append(value[start..<index])
            // Only whitespace and a comma may follow a tag.
            guard index == value.endIndex || value[index] == " " || value[index] == "\t" || value[index] == "," else { return nil }
            skipSeparators()
        }
        return tags
    }

    /// Strong comparison of two entity tags (RFC 9110 §8.8.3.2): neither is weak and they are
    /// equal.
    static func stronglyMatch(_ first: some StringProtocol, _ second: some StringProtocol) -> Bool {
        !first.hasPrefix("W/") && !second.hasPrefix("W/") && first == second
    }

    /// Weak comparison of two entity tags (RFC 9110 §8.8.3.2): their opaque tags are equal,
    /// either or both may be weak.
    static func weaklyMatch(_ first: some StringProtocol, _ second: some StringProtocol) -> Bool {
        func opaque(_ tag: some StringProtocol) -> Substring {
            let text = Substring(tag)
            return text.hasPrefix("W/") ? text.dropFirst(2) : text
        }
        return opaque(first) == opaque(second)
    }
}

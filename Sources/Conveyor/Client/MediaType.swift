/// A `Content-Type` value read per RFC 9110 §8.3.1 and §5.6: `type/subtype` tokens, then
/// `;`-separated parameters whose values are tokens or quoted strings (with `\` escapes).
/// Commas and semicolons inside a quoted string are text, not separators: splitting the field
/// naively read `text/event-stream; note="a,b/c"` as the type `b/c"`.
struct MediaType: Sendable {
    /// `type/subtype`, lower-case.
    let essence: String
    /// Parameter names (lower-case) and their values (unquoted, escapes removed), in order.
    let parameters: [(name: String, value: String)]

    /// The value of parameter `name` (case-insensitive); the first when it repeats.
    func parameter(_ name: String) -> String? {
        let lowered = name.lowercased()
        return parameters.first { $0.name == lowered }?.value
    }

    /// The media type a `Content-Type` field means. A field sent twice arrives joined with a
    /// comma; like browsers, the last value that is a valid media type counts. Nil when none is.
    static func parse(field: String) -> MediaType? {
        for value in QuotedStringSplitter.split(Substring(field), at: ",").reversed() {
            if let type = parse(value: value) { return type }
        }
        return nil
    }

    /// One media type; nil unless it starts with `token/token`.
    static func parse(value: Substring) -> MediaType? {
        var pieces = QuotedStringSplitter.split(value, at: ";")[...]
        guard let first = pieces.popFirst() else { return nil }
        let essence = first.trimmingCharacters(in: .whitespaces).lowercased()
        let halves = essence.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, halves.allSatisfy({ HTTPGrammar.isToken(String($0)) }) else { return nil }
        var parameters: [(name: String, value: String)] = []
        for piece in pieces {
            guard let equals = piece.firstIndex(of: "=") else { continue }
            let name = piece[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            guard HTTPGrammar.isToken(name) else { continue }
            let raw = piece[piece.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            parameters.append((name, QuotedStringSplitter.unquoted(raw)))
        }
        return MediaType(essence: essence, parameters: parameters)
    }
}

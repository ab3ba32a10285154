/// Splits HTTP field values where a separator stands outside a quoted string (RFC 9110 §5.6.4):
/// `no-cache="Set-Cookie, X-Token"` is one `Cache-Control` directive, `note="a,b/c"` one
/// parameter.
enum QuotedStringSplitter {
    /// `text` split at `separator` where it is not inside a quoted string (`\` escapes inside).
    static func split(_ text: Substring, at separator: Character) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var inQuotes = false
        var escaped = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if escaped {
                escaped = false
            } else if inQuotes && character == "\\" {
                escaped = true
            } else if character == "\"" {
                inQuotes.toggle()
            } else if !inQuotes && character == separator {
                parts.append(text[start..<index])
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        parts.append(text[start...])
        return parts
    }

    /// A value without its quotes and escapes; a token as it is.
    static func unquoted<Text: StringProtocol>(_ value: Text) -> String {
        guard value.count >= 2, value.first == "\"", value.last == "\"" else { return String(value) }
        var result = ""
        var escaped = false
        for character in value.dropFirst().dropLast() {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}

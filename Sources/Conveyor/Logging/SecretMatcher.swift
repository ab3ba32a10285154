/// Finds registered secret values in text however a server wrote them back: as sent, or with
/// any of their bytes escaped the ways echoes escape them — percent-encoding (`%40`, `%2f`, in
/// either case, whole or partial, and twice: `%2540`, as in a URL nested in a query value), `+` for a space (form encoding), JSON's `\/`, `\"`, `\\`
/// and `\u00XX`, and HTML's `&amp;`, `&quot;`, `&lt;`, `&gt;`, `&apos;`, `&#NN;`, `&#xHH;` —
/// mixed freely within one value. So `p%40ss%3Aw%2Frd` and `p@ss:w\/rd` are both found as
/// `p@ss:w/rd`. (Escapes of non-ASCII characters other than percent-encoding of their UTF-8
/// bytes are not decoded.)
///
/// A value is found only where it stands as a whole token (``standsAlone(_:in:from:to:)``):
/// the characters just outside it are not letters or digits, so a short token `fresh` leaves
/// `refresh` alone while `Bearer fresh`, `token=fresh`, `"fresh"` and `%3Dfresh` are masked.
/// A value of ``wholeTokenOnlyBelow`` bytes or more is found anywhere, glued to other text too:
/// no word contains one by chance, and a leak costs more than a mangled run of random letters.
///
/// Built once per change of the registered set, then shared: each ``mask(_:maximumBytes:)``
/// is one pass over the text's UTF-8, looking only at the secrets that start with the byte
/// (or the escaped byte) at each position.
final class SecretMatcher: Sendable {
    /// The secrets' UTF-8, one after the other, longest first: secret `i` is
    /// `bytes[offsets[i] ..< offsets[i + 1]]` (one buffer: no reference counting per look).
    private let bytes: [UInt8]
    private let offsets: [Int]
    /// For each byte, the indexes of the secrets starting with it (longest first):
    /// `indexes[starts[byte] ..< starts[byte + 1]]`.
    private let starts: [Int]
    private let indexes: [Int]
    /// The most backtracking steps one match attempt may take (a secret full of `%` or `\`
    /// met by text full of `%25`: each is both a literal byte and the start of an escape).
    private static let backtrackingBudget = 64

    /// Values at least this long (in UTF-8 bytes) are masked wherever they appear; shorter ones
    /// only where they stand as whole tokens. 20: the longest common English words and the
    /// identifiers in Conveyor's own messages are shorter, and random tokens (API keys, 128-bit
    /// hex, JWTs) are longer.
    static let wholeTokenOnlyBelow = 20

    /// Whether there is nothing to find.
    var isEmpty: Bool { offsets.count < 2 }

    /// - Parameter values: The secrets (empty ones are ignored).
    init(_ values: some Collection<String>) {
        let secrets = values.map { Array($0.utf8) }.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
        var counts = [Int](repeating: 0, count: 257)
        for secret in secrets { counts[Int(secret[0]) + 1] += 1 }
        for byte in 1..<257 { counts[byte] += counts[byte - 1] }
        var next = counts
        var indexes = [Int](repeating: 0, count: secrets.count)
        var bytes: [UInt8] = []
        var offsets = [0]
        for (index, secret) in secrets.enumerated() {
            indexes[next[Int(secret[0])]] = index
            next[Int(secret[0])] += 1
            bytes += secret
            offsets.append(bytes.count)
        }
        self.bytes = bytes
        self.offsets = offsets
        self.starts = counts
        self.indexes = indexes
    }

    /// `text` with every secret found replaced by `placeholder`, and cut after `maximumBytes`
    /// bytes of output when given. Masking comes first, so the cut can never leave part of a
    /// secret: a secret that starts before the cut is replaced whole (its placeholder is
    /// printed whole, so the result may pass the limit by the placeholder's length).
    /// - Returns: The text, and whether it was cut.
    func mask(_ text: String, placeholder: String, maximumBytes: Int? = nil) -> (text: String, truncated: Bool) {
        var text = text
        if let result = text.withUTF8({ mask(bytes: $0, placeholder: placeholder, maximumBytes: maximumBytes) }) {
            return (String(decoding: result.bytes, as: UTF8.self), result.truncated)
        }
        return (text, false)
    }

    /// nil when nothing was found and nothing cut (the caller keeps its string: no copy).
    private func mask(bytes text: UnsafeBufferPointer<UInt8>, placeholder: String, maximumBytes: Int?)
        -> (bytes: [UInt8], truncated: Bool)?
    {
        let limit = maximumBytes.map { max($0, 0) } ?? Int.max
        if isEmpty {
            guard text.count > limit else { return nil }
            return (Array(text[..<Self.boundary(text, atMost: limit)]), true)
        }
        return bytes.withUnsafeBufferPointer { secrets -> (bytes: [UInt8], truncated: Bool)? in
            var output: [UInt8] = []
            var copied = 0
            var position = 0
            while position < text.count {
                if output.count + (position - copied) >= limit {
                    let cut = Self.boundary(text, atMost: copied + limit - output.count)
                    output.append(contentsOf: text[copied..<max(cut, copied)])
                    return (output, true)
                }
                guard let end = longestMatch(secrets, in: text, at: position) else {
                    position += 1
                    continue
                }
                output.append(contentsOf: text[copied..<position])
                output.append(contentsOf: placeholder.utf8)
                copied = end
                position = end
            }
            guard copied > 0 else { return nil }
            output.append(contentsOf: text[copied...])
            return (output, false)
        }
    }

    /// The largest index at most `limit` that does not split a UTF-8 sequence.
    private static func boundary(_ text: UnsafeBufferPointer<UInt8>, atMost limit: Int) -> Int {
        var cut = min(limit, text.count)
        while cut > 0, cut < text.count, text[cut] & 0xC0 == 0x80 { cut -= 1 }
        return cut
    }

    /// Where the longest secret starting at `position` ends in the text, if any does.
    private func longestMatch(_ secrets: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>, at position: Int) -> Int? {
        let literal = text[position]
        var best = longest(startingWith: literal, secrets, in: text, at: position)
        if let decoded = Self.decode(text, at: position), decoded.byte != literal,
            let end = longest(startingWith: decoded.byte, secrets, in: text, at: position), end > (best ?? position)
        {
            best = end
        }
        if let decoded = Self.decodeTwice(text, at: position),
            let end = longest(startingWith: decoded.byte, secrets, in: text, at: position), end > (best ?? position)
        {
            best = end
        }
        return best
    }

    /// The furthest end of the secrets starting with `first` that match at `position`.
    private func longest(
        startingWith first: UInt8, _ secrets: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>, at position: Int
    )
        -> Int?
    {
        var best: Int?
        // Where the text has `first` as itself (not an escape's start), the secret's second
        // byte must follow at once, as itself or as an escape: that rules out most candidates
        // before the full match.
        let literalFirst = text[position] == first && !Self.startsEscape(first)
        let second = position + 1 < text.count ? text[position + 1] : nil
        let secondIsEscape = second.map(Self.startsEscape) ?? false
        for slot in starts[Int(first)]..<starts[Int(first) + 1] {
            let index = indexes[slot]
            let secret = UnsafeBufferPointer(rebasing: secrets[offsets[index]..<offsets[index + 1]])
            if literalFirst, secret.count > 1, let second, second != secret[1], !secondIsEscape { continue }
            if let end = Self.match(secret, in: text, at: position), end > (best ?? position),
                secret.count >= Self.wholeTokenOnlyBelow || Self.standsAlone(secret, in: text, from: position, to: end)
            {
                best = end
            }
        }
        return best
    }

    /// Where `secret` ends if it starts at `start`: each of its bytes is the text's byte or an
    /// escape of it. Literal first; the escape is kept as an alternative when both fit.
    private static func match(_ secret: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>, at start: Int) -> Int? {
        var index = 0
        var position = start
        var alternatives: [(index: Int, position: Int)] = []
        var budget = backtrackingBudget
        while true {
            if index == secret.count { return position }
            var next: Int?
            if position < text.count {
                let byte = secret[index]
                // The byte escaped twice (`%2525` is `%` twice encoded), once, or as itself: the
                // longest that fits is followed, the others kept as alternatives — a `%` in a
                // secret fits all three ways in `%25252B` and only the longest leads on, and a
                // secret's last `%` is masked to the end of its escape.
                var candidates: [Int] = []
                if let twice = decodeTwice(text, at: position), twice.byte == byte { candidates.append(position + twice.length) }
                if let once = decode(text, at: position), once.byte == byte { candidates.append(position + once.length) }
                if text[position] == byte { candidates.append(position + 1) }
                if let first = candidates.first {
                    for alternative in candidates.dropFirst().reversed() { alternatives.append((index + 1, alternative)) }
                    next = first
                }
            }
            if let next {
                index += 1
                position = next
                continue
            }
            guard budget > 0, let alternative = alternatives.popLast() else { return nil }
            budget -= 1
            (index, position) = alternative
        }
    }

    /// Whether the match of `secret` at `start ..< end` is a whole token: where the secret's own
    /// edge is a letter or digit, the text's character beyond that edge must not be one (nor be
    /// absent). A secret that begins or ends with punctuation (`=` of base64 padding, a JWT's
    /// dot) carries its own boundary on that side. The neighbour is read decoded when it is an
    /// escape (`%3D`, `%253D`, `\u003D` end in hex digits but stand for `=`), so a value nested
    /// in an encoded URL is still found.
    static func standsAlone(_ secret: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int)
        -> Bool
    {
        if let first = secret.first, isWordByte(first), start > 0, isWordCharacter(before: start, in: text) { return false }
        if let last = secret.last, isWordByte(last), end < text.count, isWordCharacter(at: end, in: text) { return false }
        return true
    }

    /// A letter or digit in ASCII, or any byte of a non-ASCII character (counted as a letter:
    /// only the text's side is decoded to tell).
    private static func isWordByte(_ byte: UInt8) -> Bool {
        byte >= 0x80 || isASCIIAlphanumeric(byte)
    }

    private static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default: return false
        }
    }

    /// Whether the character that ends just before `position` is a letter or digit, read
    /// through an escape (`%XX`, `%25XX`, `\u00XX`) that ends there.
    private static func isWordCharacter(before position: Int, in text: UnsafeBufferPointer<UInt8>) -> Bool {
        if position >= 3, let high = hex(text[position - 2]), let low = hex(text[position - 1]) {
            let percent = text[position - 3] == UInt8(ascii: "%")
            let doubled =
                position >= 5 && text[position - 5] == UInt8(ascii: "%") && text[position - 4] == UInt8(ascii: "2")
                && text[position - 3] == UInt8(ascii: "5")
            let unicode =
                position >= 6 && text[position - 6] == UInt8(ascii: "\\") && text[position - 5] == UInt8(ascii: "u")
                && text[position - 4] == UInt8(ascii: "0") && text[position - 3] == UInt8(ascii: "0")
            if percent || doubled || unicode { return isASCIIAlphanumeric(high << 4 | low) }
        }
        let byte = text[position - 1]
        guard byte >= 0x80 else { return isASCIIAlphanumeric(byte) }
        var lead = position - 1
        while lead > 0, position - lead < 4, text[lead] & 0xC0 == 0x80 { lead -= 1 }
        return isLetterOrDigit(String(decoding: UnsafeBufferPointer(rebasing: text[lead..<position]), as: UTF8.self))
    }

    /// Whether the character starting at `position` is a letter or digit, read through an
    /// escape that starts there.
    private static func isWordCharacter(at position: Int, in text: UnsafeBufferPointer<UInt8>) -> Bool {
        if let decoded = decode(text, at: position) { return isASCIIAlphanumeric(decoded.byte) }
        let byte = text[position]
        guard byte >= 0x80 else { return isASCIIAlphanumeric(byte) }
        let end = min(text.count, position + 4)
        return isLetterOrDigit(String(decoding: UnsafeBufferPointer(rebasing: text[position..<end]), as: UTF8.self))
    }

    /// Whether the first character of `text` (a decoded non-ASCII neighbour) is a letter or digit;
    /// false for bytes that are not UTF-8 (masking is the safe side).
    private static func isLetterOrDigit(_ text: String) -> Bool {
        guard let scalar = text.unicodeScalars.first, scalar != "\u{FFFD}" else { return false }
        return scalar.properties.isAlphabetic || scalar.properties.numericType != nil
    }

    /// Whether an escape can start with `byte`.
    private static func startsEscape(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "%") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "&")
    }

    /// The byte an escape starting at `position` stands for, and the escape's length.
    static func decode(_ text: UnsafeBufferPointer<UInt8>, at position: Int) -> (byte: UInt8, length: Int)? {
        let rest = text.count - position
        switch text[position] {
        case UInt8(ascii: "%") where rest >= 3:
            guard let high = hex(text[position + 1]), let low = hex(text[position + 2]) else { return nil }
            return (high << 4 | low, 3)
        case UInt8(ascii: "+"):
            return (UInt8(ascii: " "), 1)
        case UInt8(ascii: "\\") where rest >= 2:
            let next = text[position + 1]
            if next == UInt8(ascii: "/") || next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\") { return (next, 2) }
            guard next == UInt8(ascii: "u"), rest >= 6, text[position + 2] == UInt8(ascii: "0"), text[position + 3] == UInt8(ascii: "0"),
                let high = hex(text[position + 4]), let low = hex(text[position + 5]), high < 8
            else { return nil }
            return (high << 4 | low, 6)
        case UInt8(ascii: "&") where rest >= 4:
            return entity(text, at: position)
        default:
            return nil
        }
    }

    /// A byte percent-encoded twice (`%253D` for `=`): what a value inside a URL that is itself
    /// a query parameter's value becomes (the inner URL escapes it once, the outer once more;
    /// the attack on issue 58 found every secret with such a character shown that way).
    static func decodeTwice(_ text: UnsafeBufferPointer<UInt8>, at position: Int) -> (byte: UInt8, length: Int)? {
        guard text.count - position >= 5, text[position] == UInt8(ascii: "%"), text[position + 1] == UInt8(ascii: "2"),
            text[position + 2] == UInt8(ascii: "5"), let high = hex(text[position + 3]), let low = hex(text[position + 4])
        else { return nil }
        return (high << 4 | low, 5)
    }

    /// An HTML character reference for an ASCII character: a few names, or a number.
    private static func entity(_ text: UnsafeBufferPointer<UInt8>, at position: Int) -> (byte: UInt8, length: Int)? {
        let end = min(text.count, position + 8)
        guard let semicolon = (position + 2..<end).first(where: { text[$0] == UInt8(ascii: ";") }) else { return nil }
        let name = text[(position + 1)..<semicolon]
        let length = semicolon + 1 - position
        switch String(decoding: name, as: UTF8.self) {
        case "amp": return (UInt8(ascii: "&"), length)
        case "quot": return (UInt8(ascii: "\""), length)
        case "lt": return (UInt8(ascii: "<"), length)
        case "gt": return (UInt8(ascii: ">"), length)
        case "apos": return (UInt8(ascii: "'"), length)
        default: break
        }
        guard name.first == UInt8(ascii: "#") else { return nil }
        var value = 0
        let digits = name.dropFirst()
        if digits.first == UInt8(ascii: "x") || digits.first == UInt8(ascii: "X") {
            guard digits.count > 1 else { return nil }
            for digit in digits.dropFirst() {
                guard let number = hex(digit) else { return nil }
                value = value * 16 + Int(number)
            }
        } else {
            guard !digits.isEmpty else { return nil }
            for digit in digits {
                guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(digit - UInt8(ascii: "0"))
            }
        }
        return value < 0x80 ? (UInt8(value), length) : nil
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

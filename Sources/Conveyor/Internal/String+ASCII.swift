extension String {
    /// Equality ignoring ASCII case, for header names (ASCII tokens by RFC 9110).
    ///
    /// Foundation's `caseInsensitiveCompare` goes through locale-aware `NSString` comparison:
    /// on Linux it was the largest single cost of building a request and reading a response
    /// head (perf, the curl transport's small-GET benchmark).
    func equalsIgnoringASCIICase(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return zip(utf8, other.utf8).allSatisfy { a, b in
            a == b || (a | 0x20 == b | 0x20 && (a | 0x20) >= UInt8(ascii: "a") && (a | 0x20) <= UInt8(ascii: "z"))
        }
    }
}

#if os(Linux)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Collects one response head from libcurl's header callback, a line at a time.
///
/// libcurl hands over every head it reads — interim `100 Continue` and `103 Early Hints`
/// heads, and each head of an authentication round trip — each ending with an empty line.
struct CurlResponseHead {
    private(set) var statusCode: Int?
    private(set) var httpVersion = "HTTP/1.1"
    /// The fields in arrival order, names as the server spelled them.
    private(set) var fields: [(name: String, value: String)] = []

    /// Whether a status line has been read.
    var hasStarted: Bool { statusCode != nil }

    /// Takes one header line (with its CRLF).
    /// - Returns: True when the line ended a head that is not an interim (1xx) one.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var line = Substring(Self.decode(bytes))
        while let last = line.last, last.isNewline { line.removeLast() }  // "\r\n" is one Character
        if line.isEmpty {
            guard let statusCode else { return false }
            if (100..<200).contains(statusCode) {
                self = CurlResponseHead()
                return false
            }
            return true
        }
        if line.hasPrefix("HTTP/") {
            // A new status line starts a new head: an interim one or the next of a round trip.
            self = CurlResponseHead()
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            httpVersion = parts.first.map { $0 == "HTTP/2" || $0 == "HTTP/2.0" ? "HTTP/2" : String($0) } ?? "HTTP/1.1"
            statusCode = parts.count > 1 ? Int(parts[1]) : nil
            if statusCode == nil { statusCode = 0 }
            return false
        }
        if let first = line.first, first == " " || first == "\t", !fields.isEmpty {
            // Obsolete line folding (RFC 9112 §5.2): a continuation of the previous value.
            fields[fields.count - 1].value += " " + line.trimmingCharacters(in: .whitespaces)
            return false
        }
        guard let colon = line.firstIndex(of: ":") else { return false }
        let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        if !name.isEmpty { fields.append((name, value)) }
        return false
    }

    /// Every value of a field (case-insensitive).
    func values(of name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }

    /// The head as a URLSession-style response: repeated fields joined with ", " under the
    /// first spelling of the name, as URLSession does.
    func response(for url: URL) -> HTTPURLResponse? {
        guard let statusCode else { return nil }
        var merged: [String: String] = [:]
        var spelling: [String: String] = [:]
        for (name, value) in fields {
            let key = name.lowercased()
            if let existing = spelling[key] {
                merged[existing] = merged[existing].map { "\($0), \(value)" } ?? value
            } else {
                spelling[key] = name
                merged[name] = value
            }
        }
        return HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: merged)
    }

    /// Header bytes are meant to be ASCII; anything else is read as UTF-8, else Latin-1.
    private static func decode(_ bytes: UnsafeRawBufferPointer) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        return String(bytes: bytes, encoding: .isoLatin1) ?? ""
    }
}
#endif

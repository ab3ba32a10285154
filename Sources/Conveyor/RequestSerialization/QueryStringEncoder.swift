import Foundation

/// Turns nested parameters into `application/x-www-form-urlencoded` text, the way AFNetworking
/// did: keys sorted, nested dictionaries as `key[sub]`, arrays as `key[]`.
///
/// As in AFNetworking 1.x, values escape every character outside RFC 3986's unreserved set —
/// all of `:/?#[]@!$&'()*+,;=` included, so a signature computed over the body sees the bytes a
/// server receives — and keys keep the `[` and `]` of their nesting (`user[name]=…`). In a URL
/// Foundation still percent-encodes those brackets (`%5B`, `%5D`), which servers decode the
/// same; in a form body they are sent as they are. ``percentEscaped(_:spaceEncoding:)``
/// escapes one string the way values are.
public struct QueryStringEncoder: Sendable {
    /// How arrays are written.
    public enum ArrayEncoding: Sendable {
        /// `key[]=a&key[]=b` (the default, as AFNetworking and Rails/PHP expect).
        case brackets
        /// `key[0]=a&key[1]=b`.
        case indexed
        /// `key=a&key=b` (as Go, Flask and httpbin expect for repeated fields).
        case repeated
    }

    /// How booleans are written.
    public enum BoolEncoding: Sendable {
        /// `1` and `0` (the default, as AFNetworking's `NSNumber` did).
        case numeric
        /// `true` and `false`.
        case literal
    }

    /// How spaces are written.
    public enum SpaceEncoding: Sendable {
        /// `%20` (the default).
        case percentEscaped
        /// `+`, for servers that only decode HTML-form style.
        case plus
    }

    /// How arrays are written. Default ``ArrayEncoding/brackets``.
    public var arrayEncoding: ArrayEncoding
    /// How booleans are written. Default ``BoolEncoding/numeric``.
    public var boolEncoding: BoolEncoding
    /// How spaces are written. Default ``SpaceEncoding/percentEscaped``.
    public var spaceEncoding: SpaceEncoding

    /// Creates an encoder.
    /// - Parameters:
    ///   - arrayEncoding: How arrays are written; default `.brackets`.
    ///   - boolEncoding: How booleans are written; default `.numeric`.
    ///   - spaceEncoding: How spaces are written; default `.percentEscaped`.
    public init(
        arrayEncoding: ArrayEncoding = .brackets, boolEncoding: BoolEncoding = .numeric,
        spaceEncoding: SpaceEncoding = .percentEscaped
    ) {
        self.arrayEncoding = arrayEncoding
        self.boolEncoding = boolEncoding
        self.spaceEncoding = spaceEncoding
    }

    /// Encodes parameters as `key=value` pairs joined by `&`.
    /// - Parameter parameters: The parameters.
    /// - Returns: The query string, without a leading `?`; empty for no parameters.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)`` for values that have no
    ///   textual form (for example a `URLRequest`).
    public func encode(_ parameters: Parameters) throws -> String {
        try pairs(for: parameters).map { key, value in
            value.map { "\(escape(key, allowing: Self.keyAllowed))=\(escape($0, allowing: Self.unreserved))" }
                ?? escape(key, allowing: Self.keyAllowed)
        }.joined(separator: "&")
    }

    /// The flattened `(key, value)` pairs, unescaped; a nil value is a bare key.
    /// - Parameter parameters: The parameters.
    /// - Returns: Pairs in encoding order.
    public func pairs(for parameters: Parameters) throws -> [(String, String?)] {
        var result: [(String, String?)] = []
        for key in parameters.keys.sorted() {
            try flatten(parameters[key]!, key: key, into: &result)
        }
        return result
    }

    private func flatten(_ value: Any, key: String, into result: inout [(String, String?)]) throws {
        if Self.isNil(value) {
            result.append((key, nil))
        } else if let dictionary = value as? [String: Any] {
            for subkey in dictionary.keys.sorted() {
                try flatten(dictionary[subkey]!, key: "\(key)[\(subkey)]", into: &result)
            }
        } else if let array = value as? [Any] {
            for (index, element) in array.enumerated() {
                let name: String
                switch arrayEncoding {
                case .brackets: name = "\(key)[]"
                case .indexed: name = "\(key)[\(index)]"
                case .repeated: name = key
                }
                try flatten(element, key: name, into: &result)
            }
        } else if let set = value as? Set<AnyHashable> {
            // Sets have no order of their own: sort by text so the output is stable.
            for element in set.map({ $0.base }).sorted(by: { "\($0)" < "\($1)" }) {
                try flatten(element, key: key, into: &result)
            }
        } else {
            result.append((key, try text(for: value, key: key)))
        }
    }

    private func text(for value: Any, key: String) throws -> String {
        switch value {
        case let bool as Bool:
            switch boolEncoding {
            case .numeric: return bool ? "1" : "0"
            case .literal: return bool ? "true" : "false"
            }
        case let string as String: return string
        case let substring as Substring: return String(substring)
        case let integer as any BinaryInteger: return "\(integer)"
        case let double as Double:
            guard double.isFinite else { throw unsupported(key, value) }
            return "\(double)"
        case let float as Float:
            guard float.isFinite else { throw unsupported(key, value) }
            return "\(float)"
        case let decimal as Decimal: return "\(decimal)"
        case let number as NSNumber: return number.stringValue
        case let url as URL: return url.absoluteString
        case let uuid as UUID: return uuid.uuidString
        case let date as Date: return date.formatted(.iso8601)
        case let data as Data: return data.base64EncodedString()
        case let convertible as any LosslessStringConvertible: return convertible.description
        default: throw unsupported(key, value)
        }
    }

    private func unsupported(_ key: String, _ value: Any) -> ConveyorError {
        .parameterEncodingFailed(reason: .unsupportedValue(key: key, type: "\(type(of: value))"))
    }

    static func isNil(_ value: Any) -> Bool {
        if value is NSNull { return true }
        let mirror = Mirror(reflecting: value)
        return mirror.displayStyle == .optional && mirror.children.isEmpty
    }

    // RFC 3986 §2.3 unreserved characters.
    static let unreserved: Set<UInt8> = Set(
        Array(UInt8(ascii: "A")...UInt8(ascii: "Z")) + Array(UInt8(ascii: "a")...UInt8(ascii: "z"))
            + Array(UInt8(ascii: "0")...UInt8(ascii: "9")) + "-._~".utf8
    )
    /// Keys keep the brackets of their nesting, as AFNetworking's `[]` (and `.`) did.
    static let keyAllowed: Set<UInt8> = unreserved.union("[]".utf8)

    /// Percent-escapes `string` as a form or query value: every byte of its UTF-8 outside
    /// RFC 3986's unreserved characters (`A–Z a–z 0–9 - . _ ~`) becomes `%XX`.
    ///
    /// ```swift
    /// QueryStringEncoder.percentEscaped("a b/c?d=e&f")                      // "a%20b%2Fc%3Fd%3De%26f"
    /// QueryStringEncoder.percentEscaped("a b", spaceEncoding: .plus)        // "a+b"
    /// ```
    /// - Parameters:
    ///   - string: The text.
    ///   - spaceEncoding: How spaces are written; default ``SpaceEncoding/percentEscaped``.
    /// - Returns: The escaped text.
    public static func percentEscaped(_ string: String, spaceEncoding: SpaceEncoding = .percentEscaped) -> String {
        QueryStringEncoder(spaceEncoding: spaceEncoding).escape(string, allowing: unreserved)
    }

    private func escape(_ string: String, allowing allowed: Set<UInt8>) -> String {
        var output = [UInt8]()
        output.reserveCapacity(string.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        // Whole UTF-8 sequences are escaped byte by byte, so a multi-byte character (an emoji)
        // can never be split the way UTF-16-based batching splits surrogate pairs.
        for byte in string.utf8 {
            if allowed.contains(byte) {
                output.append(byte)
            } else if byte == UInt8(ascii: " "), spaceEncoding == .plus {
                output.append(UInt8(ascii: "+"))
            } else {
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

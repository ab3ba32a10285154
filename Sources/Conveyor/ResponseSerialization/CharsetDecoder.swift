import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Decodes response text by the charset a server names, with IANA names.
///
/// `String.Encoding` on Linux lacks EUC-KR, GB18030, Big5, KOI8-R, most ISO-8859 parts and more,
/// and Foundation there has no IANA name table. Conveyor decodes the common Unicode and Latin
/// charsets with Foundation and everything else with the C library's iconv, which takes IANA
/// names directly (on Apple platforms CoreFoundation's IANA table is tried first).
public enum CharsetDecoder {
    /// Decodes `data` as text.
    ///
    /// With no charset: a byte-order mark decides, else UTF-8, else ISO-8859-1 (which decodes
    /// every byte, so text is never lost). A named charset that cannot decode the bytes is an
    /// error, never silently garbled text.
    /// - Parameters:
    ///   - data: The bytes.
    ///   - charset: The IANA charset name from `Content-Type`, or nil.
    /// - Returns: The text.
    /// - Throws: ``ResponseSerializationError/unknownCharset(_:)`` or ``ResponseSerializationError/invalidText(charset:)``.
    public static func decode(_ data: Data, charset: String?) throws -> String {
        guard let charset = charset?.trimmingCharacters(in: CharacterSet(charactersIn: "\"' ")), !charset.isEmpty else {
            return decodeWithoutCharset(data)
        }
        let name = aliases[charset.lowercased()] ?? charset.lowercased()
        if let encoding = foundationEncodings[name] {
            var bytes = data
            if encoding == .utf8, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
            guard let text = String(data: bytes, encoding: encoding) else { throw ResponseSerializationError.invalidText(charset: charset) }
            return text
        }
        #if canImport(Darwin)
            // The alias table first (`x-sjis` is `shift_jis`, `ks_c_5601-1987` is `cp949`), as
            // iconv gets it below; then the name as sent, which CoreFoundation may know itself.
            for candidate in [name, charset] {
                let cfEncoding = CFStringConvertIANACharSetNameToEncoding(candidate as CFString)
                guard cfEncoding != kCFStringEncodingInvalidId else { continue }
                let encoding = String.Encoding(rawValue: CFStringConvertEncodingToNSStringEncoding(cfEncoding))
                if let text = String(data: data, encoding: encoding) { return text }
                throw ResponseSerializationError.invalidText(charset: charset)
            }
        #endif
        #if canImport(Glibc)
            return try iconvDecode(data, from: aliases[charset.lowercased()] ?? charset)
        #else
            throw ResponseSerializationError.unknownCharset(charset)
        #endif
    }

    /// Names servers send for a charset that iconv (glibc's) does not know under that name: the
    /// IANA registry's aliases it lacks and the `x-` names browsers accept, each mapped to a
    /// name it knows. The other IANA aliases (`MS_Kanji`, `csShiftJIS`, `windows-31j`,
    /// `csEUCKR`, `l1`, …) iconv takes as they are.
    static let aliases: [String: String] = [
        "x-sjis": "shift_jis", "x-ms-cp932": "cp932", "windows-31j": "cp932",
        "x-euc-jp": "euc-jp", "extended_unix_code_packed_format_for_japanese": "euc-jp",
        "csutf8": "utf-8", "unicode-1-1-utf-8": "utf-8", "unicode-2-0-utf-8": "utf-8", "x-unicode20utf8": "utf-8",
        "csbig5": "big5", "x-x-big5": "big5", "cn-big5": "big5",
        "ks_c_5601-1987": "cp949", "ks_c_5601-1989": "cp949", "ksc_5601": "cp949", "windows-949": "cp949",
        "x-gbk": "gbk", "windows-936": "gbk", "ms936": "gbk",
        "x-mac-roman": "macintosh", "x-cp1252": "windows-1252", "x-cp1251": "windows-1251", "x-cp1250": "windows-1250",
    ]

    /// Charsets Foundation decodes correctly on every platform.
    static let foundationEncodings: [String: String.Encoding] = [
        "utf-8": .utf8, "utf8": .utf8, "us-ascii": .ascii, "ascii": .ascii,
        "iso-8859-1": .isoLatin1, "iso8859-1": .isoLatin1, "latin1": .isoLatin1, "iso_8859-1": .isoLatin1,
        "utf-16": .utf16, "utf-16be": .utf16BigEndian, "utf-16le": .utf16LittleEndian,
        "utf-32": .utf32, "utf-32be": .utf32BigEndian, "utf-32le": .utf32LittleEndian,
    ]

    static func decodeWithoutCharset(_ data: Data) -> String {
        if data.starts(with: [0xEF, 0xBB, 0xBF]), let text = String(data: data.dropFirst(3), encoding: .utf8) { return text }
        if data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE]), let text = String(data: data, encoding: .utf16) {
            return text
        }
        // ISO-8859-1 maps every byte to the code point of the same value.
        return String(data: data, encoding: .utf8) ?? String(String.UnicodeScalarView(data.map { Unicode.Scalar($0) }))
    }

    #if canImport(Glibc)
        /// Converts with iconv to UTF-8. Stateful encodings (ISO-2022-JP) are flushed at the end.
        static func iconvDecode(_ data: Data, from charset: String) throws -> String {
            let descriptor = iconv_open("UTF-8", charset)
            guard descriptor != iconv_t(bitPattern: -1) else { throw ResponseSerializationError.unknownCharset(charset) }
            defer { iconv_close(descriptor) }
            var input = [CChar](repeating: 0, count: data.count)
            _ = input.withUnsafeMutableBytes { data.copyBytes(to: $0) }
            // UTF-8 needs at most 4 bytes per input byte for every charset iconv knows.
            var output = [CChar](repeating: 0, count: data.count * 4 + 16)
            let produced: Int = try input.withUnsafeMutableBufferPointer { inBuffer in
                try output.withUnsafeMutableBufferPointer { outBuffer in
                    var inPointer = inBuffer.baseAddress
                    var inLeft = inBuffer.count
                    var outPointer = outBuffer.baseAddress
                    var outLeft = outBuffer.count
                    if iconv(descriptor, &inPointer, &inLeft, &outPointer, &outLeft) == -1 || inLeft != 0 {
                        throw ResponseSerializationError.invalidText(charset: charset)
                    }
                    _ = iconv(descriptor, nil, nil, &outPointer, &outLeft)
                    return outBuffer.count - outLeft
                }
            }
            let bytes = output.prefix(produced).map { UInt8(bitPattern: $0) }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw ResponseSerializationError.invalidText(charset: charset)
            }
            return text
        }
    #endif
}

/// Decodes the body as text with the response's charset.
public struct StringResponseSerializer: ResponseSerializer {
    /// Used when the response names no charset; nil means BOM, else UTF-8, else ISO-8859-1.
    public let defaultCharset: String?

    /// Creates the serializer.
    /// - Parameter defaultCharset: The charset to assume when the response names none; default nil.
    public init(defaultCharset: String? = nil) { self.defaultCharset = defaultCharset }

    /// `""`.
    public func emptyResponseValue(request: URLRequest, response: HTTPResponseHead) throws -> String { "" }

    /// Decodes `data` with the `charset` of `Content-Type`.
    /// - Throws: ``ResponseSerializationError/unknownCharset(_:)`` or ``ResponseSerializationError/invalidText(charset:)``.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> String {
        try CharsetDecoder.decode(data, charset: response.textEncodingName ?? defaultCharset)
    }
}

extension ResponseSerializer where Self == StringResponseSerializer {
    /// Text in the response's charset.
    public static var string: StringResponseSerializer { StringResponseSerializer() }
}

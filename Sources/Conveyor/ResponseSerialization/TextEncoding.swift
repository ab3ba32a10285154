import Foundation

/// Decodes response text by the charset a server names.
enum TextEncoding {
    /// Decodes `data` using `charset` (an IANA name such as `utf-8` or `iso-8859-1`).
    ///
    /// With no charset, a byte-order mark decides, else UTF-8, else ISO-8859-1 (which decodes
    /// any byte sequence, so text is never lost). A named charset that does not decode the
    /// bytes returns nil rather than garbage.
    static func decode(_ data: Data, charset: String?) -> String? {
        if let charset {
            guard let encoding = encoding(forIANAName: charset) else { return nil }
            return String(data: data, encoding: encoding)
        }
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { return String(data: data.dropFirst(3), encoding: .utf8) }
        if data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE]) { return String(data: data, encoding: .utf16) }
        return String(data: data, encoding: .utf8) ?? String(data: data, encoding: .isoLatin1)
    }

    static func encoding(forIANAName name: String) -> String.Encoding? {
        switch name.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).lowercased() {
        case "utf-8", "utf8": return .utf8
        case "us-ascii", "ascii": return .ascii
        case "iso-8859-1", "latin1", "iso_8859-1": return .isoLatin1
        case "iso-8859-2", "latin2": return .isoLatin2
        case "windows-1250", "cp1250": return .windowsCP1250
        case "windows-1251", "cp1251": return .windowsCP1251
        case "windows-1252", "cp1252": return .windowsCP1252
        case "windows-1253", "cp1253": return .windowsCP1253
        case "windows-1254", "cp1254": return .windowsCP1254
        case "utf-16": return .utf16
        case "utf-16be": return .utf16BigEndian
        case "utf-16le": return .utf16LittleEndian
        case "utf-32": return .utf32
        case "shift_jis", "shift-jis", "sjis": return .shiftJIS
        case "euc-jp": return .japaneseEUC
        case "iso-2022-jp": return .iso2022JP
        default: return nil
        }
    }
}

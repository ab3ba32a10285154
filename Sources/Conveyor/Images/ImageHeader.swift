import Foundation

/// Reads an image's format and pixel size from its first bytes, without decoding it.
enum ImageHeader {
    struct Info: Equatable {
        let format: EncodedImage.Format
        let width: Int
        let height: Int
    }

    static func format(of data: Data) -> EncodedImage.Format? {
        let bytes = [UInt8](data.prefix(16))
        func starts(_ prefix: [UInt8]) -> Bool { bytes.starts(with: prefix) }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)), bytes.count >= 12, Array(bytes[8..<12]) == Array("WEBP".utf8) { return .webp }
        if starts(Array("BM".utf8)) { return .bmp }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if starts([0x00, 0x00, 0x01, 0x00]) { return .ico }
        return nil
    }

    static func read(_ data: Data) -> Info? {
        guard let format = format(of: data) else { return nil }
        let bytes = Reader(bytes: [UInt8](data.prefix(format == .jpeg || format == .tiff ? 1 << 20 : 64)))
        let size: (Int, Int)?
        switch format {
        case .png: size = bytes.u32be(16).flatMap { w in bytes.u32be(20).map { (w, $0) } }
        case .gif: size = bytes.u16le(6).flatMap { w in bytes.u16le(8).map { (w, $0) } }
        case .bmp: size = bmp(bytes)
        case .webp: size = webp(bytes)
        case .jpeg: size = jpeg(bytes)
        case .tiff: size = tiff(bytes)
        case .ico: size = ico(bytes)
        }
        guard let (width, height) = size, width > 0, height > 0 else { return nil }
        return Info(format: format, width: width, height: height)
    }

    /// Bounds-checked integer reads; nil past the end, so a truncated header is "not an image".
    struct Reader {
        let bytes: [UInt8]
        func u8(_ offset: Int) -> Int? { offset >= 0 && offset < bytes.count ? Int(bytes[offset]) : nil }
        func u16le(_ offset: Int) -> Int? { u8(offset).flatMap { low in u8(offset + 1).map { low | $0 << 8 } } }
        func u16be(_ offset: Int) -> Int? { u8(offset).flatMap { high in u8(offset + 1).map { high << 8 | $0 } } }
        func u24le(_ offset: Int) -> Int? { u16le(offset).flatMap { low in u8(offset + 2).map { low | $0 << 16 } } }
        func u32le(_ offset: Int) -> Int? { u16le(offset).flatMap { low in u16le(offset + 2).map { low | $0 << 16 } } }
        func u32be(_ offset: Int) -> Int? { u16be(offset).flatMap { high in u16be(offset + 2).map { high << 16 | $0 } } }
        func u16(_ offset: Int, bigEndian: Bool) -> Int? { bigEndian ? u16be(offset) : u16le(offset) }
        func u32(_ offset: Int, bigEndian: Bool) -> Int? { bigEndian ? u32be(offset) : u32le(offset) }
    }

    private static func bmp(_ bytes: Reader) -> (Int, Int)? {
        guard let headerSize = bytes.u32le(14) else { return nil }
        if headerSize == 12 { return bytes.u16le(18).flatMap { w in bytes.u16le(20).map { (w, $0) } } }
        guard let width = bytes.u32le(18), let height = bytes.u32le(22) else { return nil }
        // Height is signed: negative means rows are stored top-down.
        return (Int(Int32(truncatingIfNeeded: width)), abs(Int(Int32(truncatingIfNeeded: height))))
    }

    private static func webp(_ bytes: Reader) -> (Int, Int)? {
        let chunk = String(decoding: (12..<16).compactMap { bytes.u8($0).map(UInt8.init) }, as: UTF8.self)
        switch chunk {
        case "VP8 ":
            guard bytes.u8(23) == 0x9D, bytes.u8(24) == 0x01, bytes.u8(25) == 0x2A,
                let width = bytes.u16le(26), let height = bytes.u16le(28)
            else { return nil }
            return (width & 0x3FFF, height & 0x3FFF)
        case "VP8L":
            guard bytes.u8(20) == 0x2F, let b0 = bytes.u8(21), let b1 = bytes.u8(22), let b2 = bytes.u8(23), let b3 = bytes.u8(24) else {
                return nil
            }
            return (1 + (b0 | (b1 & 0x3F) << 8), 1 + (b1 >> 6 | b2 << 2 | (b3 & 0x0F) << 10))
        case "VP8X":
            guard let width = bytes.u24le(24), let height = bytes.u24le(27) else { return nil }
            return (width + 1, height + 1)
        default:
            return nil
        }
    }

    private static func jpeg(_ bytes: Reader) -> (Int, Int)? {
        var offset = 2
        while let marker = bytes.u8(offset) {
            guard marker == 0xFF else { return nil }
            guard var type = bytes.u8(offset + 1) else { return nil }
            // Fill bytes: any number of 0xFF before the marker type.
            while type == 0xFF {
                offset += 1
                guard let next = bytes.u8(offset + 1) else { return nil }
                type = next
            }
            if type == 0xD8 || type == 0x01 || (0xD0...0xD7).contains(type) {
                offset += 2
                continue
            }
            if type == 0xD9 || type == 0xDA { return nil }  // end of image or start of scan before a frame header
            guard let length = bytes.u16be(offset + 2), length >= 2 else { return nil }
            // SOF0–SOF15, except DHT (C4), JPG (C8) and DAC (CC), carry the frame size.
            if (0xC0...0xCF).contains(type), type != 0xC4, type != 0xC8, type != 0xCC {
                guard let height = bytes.u16be(offset + 5), let width = bytes.u16be(offset + 7) else { return nil }
                return (width, height)
            }
            offset += 2 + length
        }
        return nil
    }

    private static func tiff(_ bytes: Reader) -> (Int, Int)? {
        let bigEndian = bytes.u8(0) == 0x4D
        guard let ifd = bytes.u32(4, bigEndian: bigEndian), let count = bytes.u16(ifd, bigEndian: bigEndian) else { return nil }
        var width: Int?
        var height: Int?
        for index in 0..<min(count, 512) {
            let entry = ifd + 2 + index * 12
            guard let tag = bytes.u16(entry, bigEndian: bigEndian), let type = bytes.u16(entry + 2, bigEndian: bigEndian) else {
                return nil
            }
            guard tag == 256 || tag == 257 else { continue }
            // SHORT (3) values sit in the first two bytes of the value field; LONG (4) fill it.
            let value = type == 3 ? bytes.u16(entry + 8, bigEndian: bigEndian) : bytes.u32(entry + 8, bigEndian: bigEndian)
            if tag == 256 { width = value } else { height = value }
        }
        guard let width, let height else { return nil }
        return (width, height)
    }

    private static func ico(_ bytes: Reader) -> (Int, Int)? {
        guard let count = bytes.u16le(4), count > 0 else { return nil }
        var best: (Int, Int)?
        for index in 0..<min(count, 64) {
            let entry = 6 + index * 16
            guard let width = bytes.u8(entry), let height = bytes.u8(entry + 1) else { break }
            // 0 stands for 256 in the one-byte size fields.
            let size = (width == 0 ? 256 : width, height == 0 ? 256 : height)
            if best.map({ size.0 * size.1 > $0.0 * $0.1 }) ?? true { best = size }
        }
        return best
    }
}

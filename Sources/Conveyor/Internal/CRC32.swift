import Foundation

/// CRC-32 (the IEEE 802.3 polynomial, reflected, as zlib and PNG compute it), for the outbox's
/// record end mark: a record is written in place, so a crash or a power cut during `send` can
/// leave it cut short or with blocks that were never written, and the checksum tells such a file
/// from a finished one. Not a defence against someone who edits the file on purpose.
enum CRC32 {
    /// The checksum of `bytes`; `CRC32.checksum("123456789")` is `0xCBF43926`.
    static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    /// The checksum of `data`, read in place.
    static func checksum(_ data: Data) -> UInt32 {
        data.withUnsafeBytes { checksum($0.bindMemory(to: UInt8.self)) }
    }

    /// One entry per byte value: the remainder of that byte shifted through the polynomial.
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }
}

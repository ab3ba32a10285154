import Foundation

/// The example's generated files: random bytes from a seeded SplitMix64 generator, written eight
/// at a time into one buffer. Asking the system for each byte (`UInt8.random(in:using:)` with
/// `SystemRandomNumberGenerator`) made about 450,000 `getrandom` calls and kept the example
/// silent for 25-40 s on a busy machine; this takes milliseconds. The bytes need not be secret,
/// only varied enough that a resumed download stitched at the wrong offset shows.
enum GeneratedFiles {
    /// A fast, seeded generator (SplitMix64: one add, two multiply-xorshifts per 8 bytes).
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var value = state
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
    }

    /// `count` random bytes, the same for the same `seed`.
    static func randomBytes(count: Int, seed: UInt64) -> Data {
        var generator = SplitMix64(state: seed)
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < count {
                let word = generator.next().littleEndian
                let length = min(8, count - offset)
                withUnsafeBytes(of: word) { bytes in
                    buffer.baseAddress!.advanced(by: offset).copyMemory(from: bytes.baseAddress!, byteCount: length)
                }
                offset += length
            }
        }
        return data
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads and writes a child process's pipes, retrying a system call a signal interrupted.
///
/// Why not `FileHandle.availableData` or `readDataToEndOfFile()`: on swift-corelibs-foundation
/// they read with `try!`, so a read that a signal interrupts (`EINTR`, e.g. a child's `SIGCHLD`
/// arriving on the reading thread) traps and takes the whole test process down with it.
public enum PipeIO {
    /// The next bytes from `handle`, blocking until some arrive; empty at the end of the stream
    /// or on an error other than an interruption.
    /// - Parameters:
    ///   - handle: The reading end of a pipe (or any readable file handle).
    ///   - maximumLength: The most bytes to return at once.
    /// - Returns: Up to `maximumLength` bytes; empty at the end.
    public static func readChunk(from handle: FileHandle, maximumLength: Int = 64 * 1024) -> Data {
        var buffer = [UInt8](repeating: 0, count: maximumLength)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, maximumLength) }
            if count >= 0 { return Data(buffer[..<count]) }
            if errno != EINTR { return Data() }
        }
    }

    /// Everything `handle` gives until the end of the stream (or an error other than an interruption).
    /// - Parameter handle: The reading end of a pipe (or any readable file handle).
    /// - Returns: The bytes read.
    public static func readToEnd(from handle: FileHandle) -> Data {
        var data = Data()
        while true {
            let chunk = readChunk(from: handle)
            if chunk.isEmpty { return data }
            data.append(chunk)
        }
    }

    /// Writes all of `data` to `handle`, looping over short writes and interruptions.
    /// - Parameters:
    ///   - data: The bytes to write.
    ///   - handle: The writing end of a pipe (or any writable file handle).
    /// - Throws: `POSIXError` when a write fails for another reason (a closed pipe: `EPIPE`).
    public static func write(_ data: Data, to handle: FileHandle) throws {
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes { systemWrite(handle.fileDescriptor, $0.baseAddress! + offset, data.count - offset) }
            if written >= 0 {
                offset += written
            } else if errno != EINTR {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        }
    }
}

/// The C library's `write`, which `PipeIO.write(_:to:)` would otherwise shadow.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}

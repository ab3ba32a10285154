import ConveyorLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file body opened for one send, checked against the snapshot its request was built with.
///
/// Opened with `O_NONBLOCK`, so a FIFO without a writer (swapped in after the request was built)
/// does not block the opening thread; `fstat` of the descriptor then refuses anything but the
/// snapshot's regular file. Reads are positional (`pread`), so one open file serves every
/// attempt of a transfer and any reader rewinds for free.
final class OpenBodyFile: Sendable {
    let snapshot: BodyFile.Snapshot
    private let descriptor: Int32
    /// Why a read gave up, for the transport to report instead of its own abort error.
    private let failureReason = Lock<ConveyorError.BodyFileFailureReason?>(nil)

    /// Opens the snapshot's file and checks it is still that file.
    /// - Throws: ``ConveyorError/bodyFileFailed(reason:)``: missing, unreadable, not a regular
    ///   file, or changed since the snapshot.
    init(_ snapshot: BodyFile.Snapshot) throws(ConveyorError) {
        let url = snapshot.url
        let descriptor = url.withUnsafeFileSystemRepresentation { path in
            path.map { open($0, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) } ?? -1
        }
        guard descriptor >= 0 else {
            switch errno {
            case ENOENT, ENOTDIR: throw .bodyFileFailed(reason: .fileNotFound(url))
            // A socket's path cannot be opened at all.
            case ENXIO, EOPNOTSUPP: throw .bodyFileFailed(reason: .notARegularFile(url))
            default: throw .bodyFileFailed(reason: .fileNotReadable(url))
            }
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            close(descriptor)
            throw .bodyFileFailed(reason: .fileNotReadable(url))
        }
        if let mismatch = snapshot.mismatch(info) {
            close(descriptor)
            throw .bodyFileFailed(reason: mismatch)
        }
        self.snapshot = snapshot
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The reason a read failed, once one has.
    var failure: ConveyorError? { failureReason.withLock { $0 }.map { .bodyFileFailed(reason: $0) } }

    /// Copies the file's bytes from `offset` into `buffer`: `count` of them, all or nothing.
    /// - Returns: false when the file ended early or could not be read (``failure`` says why).
    func read(at offset: Int64, into buffer: UnsafeMutableRawPointer, count: Int) -> Bool {
        var done = 0
        while done < count {
            let result = pread(descriptor, buffer + done, count - done, off_t(offset) + off_t(done))
            if result > 0 {
                done += result
            } else if result == 0 {
                // Shorter than announced: truncated after it was opened.
                return fail(.fileChanged(snapshot.url))
            } else if errno != EINTR {
                return fail(.fileNotReadable(snapshot.url))
            }
        }
        return true
    }

    /// Whether the open file is still the snapshot's (checked before its last byte goes out).
    func isUnchanged() -> Bool {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return fail(.fileNotReadable(snapshot.url)) }
        if let mismatch = snapshot.mismatch(info) { return fail(mismatch) }
        return true
    }

    private func fail(_ reason: ConveyorError.BodyFileFailureReason) -> Bool {
        failureReason.withLock { if $0 == nil { $0 = reason } }
        return false
    }
}

/// Where one reader of an ``OpenBodyFile`` is: it hands out the announced bytes and no more,
/// and fails — before the last piece — when the file ended early or changed.
struct BodyFileCursor {
    let file: OpenBodyFile
    private(set) var offset: Int64 = 0

    init(_ file: OpenBodyFile) { self.file = file }

    var isAtEnd: Bool { offset >= file.snapshot.length }

    /// Copies up to `capacity` bytes into `buffer`.
    /// - Returns: The count (0 at the end), or nil when the body must not go on (see
    ///   ``OpenBodyFile/failure``).
    mutating func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int? {
        let remaining = file.snapshot.length - offset
        guard remaining > 0 else { return 0 }
        let count = Int(min(Int64(capacity), remaining))
        guard file.read(at: offset, into: buffer, count: count) else { return nil }
        // A file that changed while it was sent: the last piece is held back, so the server
        // never has a whole request made of two versions of it.
        if Int64(count) == remaining, !file.isUnchanged() { return nil }
        offset += Int64(count)
        return count
    }

    /// Moves to `position` (a rewind to resend).
    mutating func seek(to position: Int64) -> Bool {
        guard position >= 0, position <= file.snapshot.length else { return false }
        offset = position
        return true
    }
}

import ConveyorLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The exclusive lock an outbox holds on its directory's lock file: one owner at a time, in this
/// process or another.
///
/// Why a POSIX record lock (`fcntl(F_SETLK)`) rather than `flock`: an `flock` belongs to the open
/// file description, and a child spawned by any thread of the process shares every description
/// from `fork` until `exec` closes it (`O_CLOEXEC` closes it only at `exec`). An outbox closed in
/// that window left its lock held by the child for a moment, and the next outbox on the directory
/// was refused with `directoryInUse` (about one suite run in twenty). A record lock belongs to the
/// process: a child never holds it, and closing the descriptor releases it at once.
///
/// The catch is that the process, not the descriptor, owns a record lock: this process asking
/// again would be granted it, and closing *any* descriptor of the file in this process releases
/// it. So the process lists the lock files it holds (by device and inode) and refuses a second
/// owner before it opens the file at all.
struct DirectoryLock: Sendable {
    /// A file, whatever path names it.
    private struct FileIdentity: Hashable {
        let device: UInt64
        let inode: UInt64

        init(_ info: stat) {
            device = UInt64(truncatingIfNeeded: info.st_dev)
            inode = UInt64(truncatingIfNeeded: info.st_ino)
        }
    }

    /// The lock files this process holds. Opening and closing a held file also happens under
    /// this lock, so no descriptor of a held file is ever opened and closed behind its owner.
    private static let held = Lock(Set<FileIdentity>())

    /// The descriptor that holds the lock (internal for the tests, which hand it to a child).
    let descriptor: Int32
    private let identity: FileIdentity

    /// Takes the lock on `url` (created if needed) without waiting; nil when another owner, in
    /// this process or another, holds it.
    static func acquire(_ url: URL) throws(DurableFiles.Failure) -> DirectoryLock? {
        try held.withLock { held throws(DurableFiles.Failure) -> DirectoryLock? in
            var info = stat()
            // Checked before opening: a second descriptor of a held file, once closed, would
            // release its owner's lock.
            if stat(url.path, &info) == 0, held.contains(FileIdentity(info)) { return nil }
            let fd = try DurableFiles.openFile(url, flags: O_RDWR | O_CREAT)
            guard fstat(fd, &info) == 0 else {
                let code = errno
                close(fd)
                throw DurableFiles.Failure(url: url, code: code)
            }
            var region = flock()
            region.l_type = Int16(F_WRLCK)
            region.l_whence = Int16(SEEK_SET)
            region.l_start = 0
            region.l_len = 0  // to the end of the file, however long it grows
            var result: Int32
            repeat { result = fcntl(fd, F_SETLK, &region) } while result != 0 && errno == EINTR
            guard result == 0 else {
                let code = errno
                close(fd)
                // Another process holds it: POSIX allows either error.
                if code == EAGAIN || code == EACCES { return nil }
                throw DurableFiles.Failure(url: url, code: code)
            }
            let lock = DirectoryLock(descriptor: fd, identity: FileIdentity(info))
            held.insert(lock.identity)
            return lock
        }
    }

    /// Releases the lock: closing the descriptor ends the record lock.
    func release() {
        Self.held.withLock { held in
            _ = close(descriptor)
            held.remove(identity)
        }
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few POSIX calls the outbox needs to keep a promise across a crash or a power cut:
/// data written and `fsync`ed before a rename makes it visible, the directory `fsync`ed after
/// (`F_FULLFSYNC` on Darwin, see `syncFile`); or a new file written in place, synced, its name
/// made durable (``createInPlace(_:contents:)``) when its contents say whether it is whole.
/// Foundation's `Data.write(to:options: .atomic)` renames but never syncs, so a power cut can
/// leave an empty file under the new name.
enum DurableFiles {
    /// A failed system call, with the file it was about.
    struct Failure: Error, CustomStringConvertible {
        let url: URL
        let code: Int32

        var error: POSIXError { POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
        var description: String { "\(url.path): \(String(cString: strerror(code)))" }
    }

    /// Writes `data` to a new file at `url` (which must not exist) and syncs it.
    static func create(_ url: URL, contents data: Data) throws(Failure) {
        let fd = try openFile(url, flags: O_WRONLY | O_CREAT | O_EXCL)
        defer { close(fd) }
        try writeAll(fd, data, url: url)
        try syncFile(fd, url: url)
    }

    /// Writes `data` to a new file at `url` (which must not exist) in place: synced, and its name
    /// made durable (``syncNewName(of:)``). A failure after the file was created removes it; a
    /// file that was already there is never touched (`O_EXCL`).
    static func createInPlace(_ url: URL, contents data: Data) throws(Failure) {
        let fd = try openFile(url, flags: O_WRONLY | O_CREAT | O_EXCL)
        do {
            try writeAll(fd, data, url: url)
            try syncFile(fd, url: url)
        } catch {
            close(fd)
            remove(url)
            throw error
        }
        close(fd)
        try syncNewName(of: url)
    }

    /// Makes the name of a file just created and synced durable. On Linux the file's own `fsync`
    /// already did: ext4 commits the transaction that created the name (with a journal) or syncs
    /// the directory of a new entry itself (without one, since Linux 2.6.35: "fsync sync new
    /// parent directories in no-journal mode"), XFS forces its log past the create, and Btrfs logs
    /// a new file's name with it. Elsewhere (APFS, or any system that promises only POSIX) the
    /// directory is synced.
    static func syncNewName(of url: URL) throws(Failure) {
        #if !os(Linux)
            try syncDirectory(url.deletingLastPathComponent())
        #endif
    }

    /// Copies the file at `source` into a new file at `url` in 64 kB pieces and syncs it;
    /// returns the bytes copied. The source is never held in memory whole.
    static func copy(_ source: URL, to url: URL) throws(Failure) -> Int64 {
        let input = try openFile(source, flags: O_RDONLY)
        defer { close(input) }
        let output = try openFile(url, flags: O_WRONLY | O_CREAT | O_EXCL)
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var total: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Failure(url: source, code: errno) }
            if count == 0 { break }
            try writeAll(output, Data(buffer[0..<count]), url: url)
            total += Int64(count)
        }
        try syncFile(output, url: url)
        return total
    }

    /// Creates an empty file if there is none, without syncing: a marker whose loss in a power
    /// cut costs a flag, not an item.
    static func touch(_ url: URL) {
        if let fd = try? openFile(url, flags: O_WRONLY | O_CREAT | O_NOFOLLOW) { close(fd) }
    }

    /// Reads a whole file of the outbox's own: a symbolic link is refused (`ELOOP`), and so is
    /// anything but a regular file (`EINVAL`) — an item's file is never followed out of the
    /// directory — and a file of more than `maximumBytes` (`EFBIG`), before any of it is read (a
    /// sparse file planted under an item's name can claim gigabytes it does not take on disk).
    static func readFile(_ url: URL, maximumBytes: Int64) throws(Failure) -> Data {
        let fd = try openFile(url, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(url: url, code: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw Failure(url: url, code: EINVAL) }
        guard Int64(info.st_size) <= maximumBytes else { throw Failure(url: url, code: EFBIG) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Failure(url: url, code: errno) }
            if count == 0 { return data }
            // A file that grows while it is read is bounded too.
            guard Int64(data.count + count) <= maximumBytes else { throw Failure(url: url, code: EFBIG) }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    /// Whether `url` is a symbolic link (not followed).
    static func isSymbolicLink(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    /// Creates `url` and every missing directory above it, each 0700 whatever the umask
    /// (`mkdir`'s mode can only lose bits to the umask, never gain them, so no directory is
    /// ever wider than 0700, even for a moment). Directories that exist are left as they are.
    static func createDirectories(_ url: URL) throws(Failure) {
        var missing: [URL] = []
        var current = url.standardizedFileURL
        while !exists(current), current.path != "/", !current.path.isEmpty {
            missing.append(current)
            current = current.deletingLastPathComponent()
        }
        for directory in missing.reversed() {
            if mkdir(directory.path, 0o700) != 0, errno != EEXIST { throw Failure(url: directory, code: errno) }
            try restrictDirectory(directory)
        }
    }

    /// Makes a directory of the outbox's 0700, whatever the umask and whoever made it.
    static func restrictDirectory(_ url: URL) throws(Failure) {
        guard chmod(url.path, 0o700) == 0 else { throw Failure(url: url, code: errno) }
    }

    /// Syncs an existing file (one written by someone else, such as a multipart encoder).
    static func sync(_ url: URL) throws(Failure) {
        let fd = try openFile(url, flags: O_RDONLY)
        defer { close(fd) }
        try syncFile(fd, url: url)
    }

    /// Syncs a directory, so the names created, renamed or removed in it survive a power cut.
    static func syncDirectory(_ url: URL) throws(Failure) {
        let fd = try openFile(url, flags: O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try syncFile(fd, url: url)
    }

    /// Renames `source` to `destination` (same file system), replacing it.
    static func move(_ source: URL, to destination: URL) throws(Failure) {
        guard rename(source.path, destination.path) == 0 else { throw Failure(url: destination, code: errno) }
    }

    /// Removes a file, ignoring any failure: for temporary files and pieces of a write that failed.
    static func remove(_ url: URL) {
        _ = unlink(url.path)
    }

    /// Removes a file; a missing file is not an error, any other failure is returned to be reported.
    static func removeFile(_ url: URL) -> Result<Void, Failure> {
        guard unlink(url.path) == 0 || errno == ENOENT else { return .failure(Failure(url: url, code: errno)) }
        return .success(())
    }

    /// The size of a regular file, nil when there is none. A symbolic link is not followed
    /// (nil) unless `followingLinks` — for a caller's own file, not for the outbox's.
    static func size(of url: URL, followingLinks: Bool = false) -> Int64? {
        var info = stat()
        let found = followingLinks ? stat(url.path, &info) : lstat(url.path, &info)
        guard found == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Whether anything, a dangling link included, is at `url`.
    static func exists(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0
    }

    /// The names in a directory, read one at a time (100,000 items need no array of URLs).
    /// Returns the names that are not UTF-8, as bytes, instead of passing them to `body`: a
    /// `String` would repair them into names that do not exist.
    @discardableResult
    static func forEachName(in directory: URL, _ body: (String) -> Void) throws(Failure) -> [[UInt8]] {
        var foreign: [[UInt8]] = []
        guard let stream = opendir(directory.path) else { throw Failure(url: directory, code: errno) }
        defer { closedir(stream) }
        // The name is read in place, up to its NUL. Loading `entry.pointee.d_name` would copy the
        // declared 256 bytes, past the end of readdir's buffer for its last entry: with a few
        // thousand names, AddressSanitizer reports a heap-buffer-overflow there, and without it
        // the read can land on an unmapped page (corelibs' Process.run() crashed on exactly that).
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(stream) {
            let pointer = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self)
            guard let name = String(validatingCString: pointer) else {
                foreign.append(Array(UnsafeBufferPointer(start: pointer, count: strlen(pointer))).map { UInt8(bitPattern: $0) })
                continue
            }
            if name != "." && name != ".." { body(name) }
        }
        return foreign
    }

    /// Renames the file named by `bytes` (not UTF-8) in `directory` to `destination`.
    static func move(rawName bytes: [UInt8], in directory: URL, to destination: URL) throws(Failure) {
        let source = Array(directory.path.utf8) + [UInt8(ascii: "/")] + bytes + [0]
        let result = source.withUnsafeBufferPointer { pointer in
            pointer.withMemoryRebound(to: CChar.self) { rename($0.baseAddress!, destination.path) }
        }
        guard result == 0 else { throw Failure(url: destination, code: errno) }
    }

    /// Opens `url` with `flags` (plus `O_CLOEXEC`), again after `EINTR`. A file it creates is
    /// made 0600 with `fchmod`, whatever the umask (which could leave it 0400, or wider than
    /// asked when the file existed): items carry credentials and personal data.
    static func openFile(_ url: URL, flags: Int32) throws(Failure) -> Int32 {
        while true {
            let fd = open(url.path, flags | O_CLOEXEC, 0o600)
            if fd >= 0 {
                if flags & O_CREAT != 0, fchmod(fd, 0o600) != 0 {
                    let code = errno
                    close(fd)
                    throw Failure(url: url, code: code)
                }
                return fd
            }
            if errno != EINTR { throw Failure(url: url, code: errno) }
        }
    }

    private static func writeAll(_ fd: Int32, _ data: Data, url: URL) throws(Failure) {
        var failure: Int32 = 0
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure != 0 { throw Failure(url: url, code: failure) }
    }

    /// Flushes the file's (or directory's) data and metadata to stable storage: every sync of
    /// the outbox goes through here. On Darwin `fsync` only hands the data to the drive, whose
    /// cache a power cut can lose, so `F_FULLFSYNC` asks the drive to flush too; a file system
    /// that does not support it gets `fsync`.
    private static func syncFile(_ fd: Int32, url: URL) throws(Failure) {
        #if canImport(Darwin)
            if fcntl(fd, F_FULLFSYNC) == 0 { return }
        #endif
        guard fsync(fd) == 0 else { throw Failure(url: url, code: errno) }
    }
}

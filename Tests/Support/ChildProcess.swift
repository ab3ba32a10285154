import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn`, for the tests: the program, its arguments and
/// where its standard streams go, then waiting for it and signalling it.
///
/// Why not Foundation's `Process`: on Linux, corelibs' `Process.run()` finds the highest open
/// descriptor by reading `/proc/self/fd` and copies each entry's whole 256-byte `d_name`. A test
/// process of the parallel suites holds over 2,000 descriptors (servers, their connections), so
/// the listing fills `readdir`'s 32 KiB buffer, and the copy of its last entry reads past the
/// buffer's end: now and then into an unmapped page, a SIGSEGV in `memcpy` that took the whole
/// run down (the registers showed the entries "1631" and "1632"). Here the child closes every
/// descriptor above 2 itself (`posix_spawn_file_actions_addclosefrom_np`), and where that is
/// missing the descriptors are listed without copying past a name's end. Darwin has no `/proc`:
/// there the child closes every descriptor its file actions do not name
/// (`POSIX_SPAWN_CLOEXEC_DEFAULT`).
public final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: @unchecked Sendable {
        /// The test process's own stream.
        case inherit
        /// `/dev/null`.
        case null
        /// A pipe: the child gets the end it needs; the parent's copy of that end is closed once
        /// the child runs, so the other end sees the end of the stream when the child exits.
        case pipe(Pipe)
        /// An open file.
        case file(FileHandle)
    }

    /// A spawn that failed: the program and `posix_spawn`'s error.
    public struct LaunchError: Error, CustomStringConvertible {
        /// What was started and why it failed.
        public let description: String
    }

    /// The child's process identifier.
    public let processIdentifier: pid_t
    /// The raw `waitpid` status, once reaped.
    private let status = Mutex<Int32?>(nil)
    /// Serialises `waitpid`: one caller reaps, the others find the status.
    private let reaper = Mutex(())

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - executable: The program's path.
    ///   - arguments: Its arguments (without the program name).
    ///   - environment: The child's whole environment; `nil` for the test process's.
    ///   - standardInput: Where its standard input comes from.
    ///   - standardOutput: Where its standard output goes.
    ///   - standardError: Where its standard error goes.
    /// - Throws: ``LaunchError`` when the program cannot be started.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, standardInput: Stream = .inherit,
        standardOutput: Stream = .inherit, standardError: Stream = .inherit
    ) throws {
        #if canImport(Darwin)
            // An opaque pointer on Darwin, allocated by `posix_spawn_file_actions_init`.
            var actions: posix_spawn_file_actions_t? = nil
        #else
            var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var childEnds: [FileHandle] = []
        for (target, stream) in [(STDIN_FILENO, standardInput), (STDOUT_FILENO, standardOutput), (STDERR_FILENO, standardError)] {
            switch stream {
            case .inherit:
                #if canImport(Darwin)
                    // Named, so that POSIX_SPAWN_CLOEXEC_DEFAULT leaves it open.
                    posix_spawn_file_actions_addinherit_np(&actions, target)
                #else
                    break
                #endif
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
            case .pipe(let pipe):
                let end = target == STDIN_FILENO ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target)
                childEnds.append(end)
            case .file(let handle): posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
            }
        }
        #if !canImport(Darwin)
            Self.closeInheritedDescriptors(&actions)
        #endif

        #if canImport(Darwin)
            // An opaque pointer on Darwin, allocated by `posix_spawnattr_init`.
            var attributes: posix_spawnattr_t? = nil
        #else
            var attributes = posix_spawnattr_t()
        #endif
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A clean signal state: the spawning thread's mask (a dispatch thread may block signals)
        // and an ignored SIGPIPE would otherwise carry over, and `terminate()` could go unheard.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        #if canImport(Darwin)
            // The child keeps only the descriptors the file actions name (the standard streams).
            let flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_CLOEXEC_DEFAULT
        #else
            let flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        #endif
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            argv.forEach { free($0) }
            envp?.forEach { free($0) }
        }
        var pid = pid_t()
        let result: Int32
        if let envp {
            result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        } else {
            #if canImport(Darwin)
                // `environ` is not for use outside the main executable on Darwin: pass a copy.
                let inherited = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
                defer { inherited.forEach { free($0) } }
                result = posix_spawn(&pid, executable, &actions, &attributes, argv, inherited)
            #else
                result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
            #endif
        }
        guard result == 0 else {
            throw LaunchError(description: "could not start \(executable): \(String(cString: strerror(result)))")
        }
        processIdentifier = pid
        for end in childEnds { try? end.close() }
    }

    #if !canImport(Darwin)
        /// Has the child close every descriptor above standard error, after the redirections.
        private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
            // glibc 2.34 and later close them in the child in one step, with no window for a
            // descriptor another thread opens meanwhile. Looked up at run time: the declaration
            // is not part of the Glibc module Swift imports.
            typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            if let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "posix_spawn_file_actions_addclosefrom_np") {
                let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
                if closeFrom(&actions, 3) == 0 { return }
            }
            for descriptor in openDescriptors() where descriptor > STDERR_FILENO {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }

        /// The open descriptors, read from `/proc/self/fd` one name at a time (never past its end).
        private static func openDescriptors() -> [Int32] {
            guard let directory = opendir("/proc/self/fd") else { return [] }
            let ownDescriptor = dirfd(directory)
            var found: [Int32] = []
            while let entry = readdir(directory) {
                let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 0
                let name = String(cString: UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self))
                if let descriptor = Int32(name), descriptor != ownDescriptor { found.append(descriptor) }
            }
            closedir(directory)
            return found
        }
    #endif

    /// Blocks until the child has exited (call it off Swift Concurrency's cooperative pool).
    public func waitUntilExit() {
        reaper.withLock { _ in
            guard status.withLock({ $0 }) == nil else { return }
            var raw: Int32 = 0
            while waitpid(processIdentifier, &raw, 0) == -1 && errno == EINTR {}
            status.withLock { $0 = raw }
        }
    }

    /// Waits for the child to exit on a thread of its own, not blocking the cooperative pool.
    public func exited() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread { [self] in
                waitUntilExit()
                done.resume()
            }
        }
    }

    /// The exit status, or the number of the signal that ended the child (as `Process` has it).
    /// Only after ``waitUntilExit()``.
    public var terminationStatus: Int32 {
        let raw = status.withLock { $0 } ?? 0
        return terminatedBySignal ? raw & 0x7f : (raw >> 8) & 0xff
    }

    /// Whether a signal ended the child. Only after ``waitUntilExit()``.
    public var terminatedBySignal: Bool {
        let raw = status.withLock { $0 } ?? 0
        return raw & 0x7f != 0 && raw & 0x7f != 0x7f
    }

    /// Sends `signal` unless the child has been reaped (its identifier could be reused then).
    public func signal(_ signal: Int32) {
        status.withLock { reaped in
            if reaped == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// Sends `SIGTERM`.
    public func terminate() { signal(SIGTERM) }

    /// The running program's executable, symbolic links resolved: `/proc/self/exe` on Linux; on
    /// Darwin, which has no `/proc`, the main bundle's executable (the `xctest` tool under
    /// `swift test`, so use ``productsDirectory`` for the package's own products).
    public static var currentExecutable: URL {
        #if canImport(Darwin)
            (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
        #else
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        #endif
    }

    /// The directory the package's products are built into (`.build/debug`): on Linux the running
    /// test binary's or executable's; on Darwin the loaded `.xctest` bundle's, else the running
    /// executable's.
    public static var productsDirectory: URL {
        #if canImport(Darwin)
            if let tests = Bundle.allBundles.first(where: { $0.bundleURL.pathExtension == "xctest" }) {
                return tests.bundleURL.deletingLastPathComponent()
            }
        #endif
        return currentExecutable.deletingLastPathComponent()
    }
}

import Foundation
import Synchronization

/// Starts child processes one at a time across the whole test process.
///
/// corelibs Foundation's `Process.run()` is not safe to call from several threads at once: with
/// the outbox crash test launching dozens of children while other suites launched theirs, a
/// parallel run crashed inside `Process.run()` (SIGSEGV in `memcpy`). Every test that starts a
/// process goes through ``run(_:)``; only the start is serialised, not the child's life.
public enum ProcessLaunch {
    private static let lock = Mutex(())

    /// Runs `process.run()` while no other test thread is starting a process.
    /// - Parameter process: The configured process.
    /// - Throws: What `Process.run()` throws.
    public static func run(_ process: Process) throws {
        try lock.withLock { _ in try process.run() }
    }
}

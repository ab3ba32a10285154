import Foundation

/// Runs a program built with the tests (an example, a helper) as a child process.
///
/// `Process.waitUntilExit()` blocks its thread, so the wait runs on a thread of its own,
/// never on Swift Concurrency's cooperative pool (two threads on this machine).
public enum ExampleProcess {
    /// What a finished process left.
    public struct Result: Sendable {
        /// The exit status.
        public let status: Int32
        /// Everything written to standard output.
        public let output: String
        /// Everything written to standard error.
        public let errors: String
    }

    /// The built executable `name`, next to the running test bundle.
    public static func executable(_ name: String) -> URL {
        ChildProcess.productsDirectory.appendingPathComponent(name)
    }

    /// Runs `name` with `arguments` to its end, killing it after `timeout` seconds.
    public static func run(_ name: String, arguments: [String], timeout: TimeInterval = 120) async throws -> Result {
        let output = Pipe()
        let errors = Pipe()
        // At the lowest CPU priority: the examples run beside tests that measure time on a
        // two-core machine, and must not starve them.
        let process = try ChildProcess(
            "/usr/bin/nice", ["-n", "19", executable(name).path] + arguments, standardOutput: .pipe(output),
            standardError: .pipe(errors))
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let killer = DispatchWorkItem { process.terminate() }
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
                let (outData, errData) = SetupTools.readToEnd(output, errors)
                process.waitUntilExit()
                killer.cancel()
                continuation.resume(
                    returning: Result(
                        status: process.terminationStatus,
                        output: String(decoding: outData, as: UTF8.self),
                        errors: String(decoding: errData, as: UTF8.self)))
            }
        }
    }
}

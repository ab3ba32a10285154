import Foundation
import Synchronization

/// Set-up steps the test servers share: running a command to its end, and Python virtualenvs
/// installed once under `.build/` (httpbin for the conformance tests, hypercorn for TLS).
///
/// Everything here blocks its thread: call it from a thread of your own, never from Swift
/// Concurrency's cooperative pool (two threads on this machine).
public enum SetupTools {
    /// A set-up step that failed, saying which and why.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed and what the command printed.
        public let description: String
    }

    /// The package's root directory (where `.build/` is).
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs `executable` with `arguments` to its end.
    /// - Parameters:
    ///   - executable: The program's path (`/usr/bin/env` to look one up on `PATH`).
    ///   - arguments: Its arguments.
    ///   - what: What the step does, for the error.
    /// - Returns: Its standard output.
    /// - Throws: ``Failure`` when it cannot start or exits non-zero (with its standard error).
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], what: String) throws -> String {
        let output = Pipe()
        let errors = Pipe()
        let process: ChildProcess
        do {
            process = try ChildProcess(executable, arguments, standardOutput: .pipe(output), standardError: .pipe(errors))
        } catch { throw Failure(description: "\(what): \(error)") }
        let (text, errorText) = readToEnd(output, errors)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "\(what) failed with status \(process.terminationStatus): \(String(decoding: errorText, as: UTF8.self))")
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Reads a child's standard output and standard error to their ends, both at once: a child
    /// blocked writing to a full pipe nobody reads would never exit. Blocks until both close.
    static func readToEnd(_ output: Pipe, _ errors: Pipe) -> (output: Data, errors: Data) {
        let errorData = Mutex(Data())
        let group = DispatchGroup()
        group.enter()
        Thread.detachNewThread {
            let data = PipeIO.readToEnd(from: errors.fileHandleForReading)
            errorData.withLock { $0 = data }
            group.leave()
        }
        let outputData = PipeIO.readToEnd(from: output.fileHandleForReading)
        group.wait()
        return (outputData, errorData.withLock { $0 })
    }

    private static let installLock = Mutex(())

    /// The virtualenv `.build/<name>` with `packages` installed, creating it on first use (a
    /// marker file records a finished install, so an interrupted one starts over).
    /// - Parameters:
    ///   - name: The directory under `.build/`.
    ///   - packages: What `pip install` gets.
    /// - Returns: The virtualenv's directory.
    /// - Throws: ``Failure`` naming what is missing (python3, python3-venv, PyPI).
    public static func virtualenv(_ name: String, packages: [String]) throws -> URL {
        try installLock.withLock { _ in
            let venv = packageRoot.appendingPathComponent(".build/\(name)")
            let marker = venv.appendingPathComponent(".conveyor-installed")
            if FileManager.default.fileExists(atPath: marker.path) { return venv }
            try? FileManager.default.removeItem(at: venv)
            guard let python = which("python3") else {
                throw Failure(
                    description:
                        "python3 is required to set up \(packages.joined(separator: ", ")): install it (apt-get install python3 python3-venv)"
                )
            }
            try run(python, ["-m", "venv", venv.path], what: "creating .build/\(name) (is python3-venv installed?)")
            try run(
                venv.appendingPathComponent("bin/pip").path, ["install", "--quiet", "--disable-pip-version-check"] + packages,
                what: "pip install \(packages.joined(separator: " ")) (is PyPI reachable?)")
            _ = FileManager.default.createFile(atPath: marker.path, contents: Data())
            return venv
        }
    }

    /// The first executable `name` on `PATH`.
    public static func which(_ name: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}

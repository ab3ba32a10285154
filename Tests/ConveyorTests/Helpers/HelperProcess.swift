import ConveyorTestSupport
import Foundation

/// `ConveyorTestHelper` (the executable beside the test bundle) run with some arguments, its
/// standard output delivered as lines, read on a thread of its own.
final class HelperProcess: Sendable {
    let process: ChildProcess
    let lines: AsyncStream<String>

    /// Starts the helper.
    init(_ arguments: [String]) throws {
        let pipe = Pipe()
        let stream = AsyncStream.makeStream(of: String.self)
        lines = stream.stream
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = PipeIO.readChunk(from: handle)
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    stream.continuation.yield(String(decoding: buffer[..<newline], as: UTF8.self))
                    buffer.removeSubrange(...newline)
                }
            }
            stream.continuation.finish()
        }
        process = try ChildProcess(ExampleProcess.executable("ConveyorTestHelper").path, arguments, standardOutput: .pipe(pipe))
    }

    /// Sends `signal` (default SIGKILL).
    func kill(_ signal: Int32 = SIGKILL) { process.signal(signal) }

    /// Waits for the process to end without blocking a thread of the cooperative pool.
    func exited() async { await process.exited() }
}

extension HelperProcess {
    /// Runs `ConveyorTestHelper` with `arguments` in `environment` to its end, off the
    /// cooperative pool, and returns what it printed.
    static func output(_ arguments: [String], environment: [String: String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        let pipe = Pipe()
                        let process = try ChildProcess(
                            ExampleProcess.executable("ConveyorTestHelper").path, arguments, environment: environment,
                            standardOutput: .pipe(pipe))
                        let text = String(decoding: PipeIO.readToEnd(from: pipe.fileHandleForReading), as: UTF8.self)
                        process.waitUntilExit()
                        return text
                    })
            }
        }
    }
}

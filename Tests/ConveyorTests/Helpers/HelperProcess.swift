import ConveyorTestSupport
import Foundation

/// `ConveyorTestHelper` (the executable beside the test bundle) run with some arguments, its
/// standard output delivered as lines, read on a thread of its own.
final class HelperProcess: Sendable {
    let process: Process
    let lines: AsyncStream<String>

    /// Starts the helper.
    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("ConveyorTestHelper")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
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
        try ProcessLaunch.run(process)
    }

    /// Sends `signal` (default SIGKILL).
    func kill(_ signal: Int32 = SIGKILL) { Foundation.kill(process.processIdentifier, signal) }

    /// Waits for the process to end without blocking a thread of the cooperative pool.
    func exited() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread { [process] in
                process.waitUntilExit()
                done.resume()
            }
        }
    }
}

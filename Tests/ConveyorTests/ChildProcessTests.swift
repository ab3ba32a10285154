import ConveyorTestSupport
import Foundation
import Testing

/// The tests' own process launcher: what the suites rely on when they start a helper.
@Suite("ChildProcess, the tests' launcher")
struct ChildProcessTests {
    @Test("With 2,000 descriptors open (more than readdir's buffer lists at once) a child starts and inherits only 0–2")
    func manyDescriptors() async throws {
        // corelibs' Process.run() read past readdir's buffer at this count (AddressSanitizer:
        // heap-buffer-overflow, READ of size 256 in findMaximumOpenFromProcSelfFD).
        let extra = (0..<2_000).map { _ in open("/dev/null", O_RDONLY) }
        defer { extra.forEach { close($0) } }
        #expect(extra.allSatisfy { $0 >= 0 })
        // posix_spawn returns once the program is running, so its descriptors can be listed.
        let child = try ChildProcess("/bin/sleep", ["30"], standardOutput: .null)
        // The program may hold a file of its own for a moment as it starts (a locale file): what
        // must not be there is any of the 2,000 descriptors, which all lead to /dev/null.
        let directory = "/proc/\(child.processIdentifier)/fd"
        let listed = try FileManager.default.contentsOfDirectory(atPath: directory).compactMap(Int32.init)
        let inherited = listed.filter { descriptor in
            descriptor > 2 && (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(descriptor)")) == "/dev/null"
        }
        child.terminate()
        await child.exited()
        #expect(child.terminatedBySignal && child.terminationStatus == SIGTERM)
        #expect(Set(listed).isSuperset(of: [0, 1, 2]) && listed.count < 10, "\(listed)")
        #expect(inherited.isEmpty, "\(inherited)")
    }

    @Test("Exit status, the environment given, standard input from a pipe")
    func statusAndStreams() async throws {
        let failing = try ChildProcess("/bin/sh", ["-c", "exit 3"], standardOutput: .null)
        await failing.exited()
        #expect(failing.terminationStatus == 3 && !failing.terminatedBySignal)

        let input = Pipe()
        let output = Pipe()
        let echo = try ChildProcess(
            "/bin/sh", ["-c", "read line; echo \"$GREETING $line\""], environment: ["GREETING": "hello"],
            standardInput: .pipe(input), standardOutput: .pipe(output))
        try PipeIO.write(Data("world\n".utf8), to: input.fileHandleForWriting)
        try input.fileHandleForWriting.close()
        let text = String(decoding: PipeIO.readToEnd(from: output.fileHandleForReading), as: UTF8.self)
        await echo.exited()
        #expect(text == "hello world\n")

        #expect(throws: ChildProcess.LaunchError.self) { try ChildProcess("/nonexistent/program", []) }
    }
}

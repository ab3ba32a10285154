import ConveyorTestSupport
import Foundation

/// A tiny tmpfs mounted for one test, to make a disk fill up (or refuse writes) for real.
/// Needs root, as CI and the development machines have; when mounting fails the test fails
/// with mount's own message.
final class SmallDisk: Sendable {
    let url: URL

    struct MountError: Error, CustomStringConvertible {
        let description: String
    }

    init(kilobytes: Int, readOnly: Bool = false) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let options = "size=\(kilobytes)k" + (readOnly ? ",ro" : "")
        let output = try Self.run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", url.path])
        guard output.status == 0 else {
            try? FileManager.default.removeItem(at: url)
            throw MountError(description: "mounting a \(kilobytes) kB tmpfs at \(url.path) failed (root needed): \(output.text)")
        }
    }

    deinit {
        _ = try? Self.run("/bin/umount", ["-l", url.path])
        try? FileManager.default.removeItem(at: url)
    }

    private static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, text: String) {
        let pipe = Pipe()
        let process = try ChildProcess(tool, arguments, standardOutput: .pipe(pipe), standardError: .pipe(pipe))
        let data = PipeIO.readToEnd(from: pipe.fileHandleForReading)
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

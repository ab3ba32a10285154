import Conveyor
import ConveyorTesting
import Foundation

/// Peak memory of a large multipart upload, measured in a child process (VmHWM from
/// /proc/self/status), so neither the server nor other scenarios count toward it.
enum MultipartMemory {
    struct Result: Codable {
        let megabytes: Int
        let peakRSSMegabytes: Double
        let baselineRSSMegabytes: Double
        let seconds: Double
        let bytesReceived: Int
    }

    /// Starts a server that drains bodies, runs the child, and reads its report.
    static func measure(megabytes: Int) throws -> Result {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.maximumStoredBodySize = 1 << 20
        let baseline = try child(["--child-multipart", server.baseURL.absoluteString, "0"])
        let start = Date()
        let report = try child(["--child-multipart", server.baseURL.absoluteString, String(megabytes)])
        return Result(
            megabytes: megabytes, peakRSSMegabytes: report, baselineRSSMegabytes: baseline,
            seconds: Date().timeIntervalSince(start), bytesReceived: server.receivedRequests.last?.bodyLength ?? 0
        )
    }

    private static func child(_ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let value = Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "child failed: \(String(decoding: data, as: UTF8.self))"])
        }
        return value
    }

    /// In the child: write a file of `megabytes` in 1 MB blocks, upload it as one multipart
    /// part, print the peak RSS in MB.
    static func runChild(baseURL: URL, megabytes: Int) async throws {
        let client = HTTPClient(baseURL: baseURL)
        if megabytes > 0 {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-\(UUID().uuidString).bin")
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            let handle = try FileHandle(forWritingTo: file)
            let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 131) })
            for _ in 0..<megabytes { try handle.write(contentsOf: block) }
            try handle.close()
            defer { try? FileManager.default.removeItem(at: file) }
            _ = try await client.post("post", constructingBody: { try $0.append(fileURL: file, name: "file") })
        }
        print(peakRSSMegabytes())
    }

    static func peakRSSMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return -1 }
        return kilobytes / 1024
    }
}

import Conveyor
import ConveyorTestSupport
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
        let downloadPeakRSSMegabytes: Double
        let downloadSeconds: Double
        let rawDownloadPeakRSSMegabytes: Double
        let rawDownloadSeconds: Double
        /// A body streamed through `client.stream` to a slow consumer, per transport.
        let streamMegabytes: Int
        let streamCurlPeakRSSMegabytes: Double
        let streamCurlSeconds: Double
        let streamURLSessionPeakRSSMegabytes: Double
        let streamURLSessionSeconds: Double
    }

    /// Starts a server that drains bodies, runs the child, and reads its report.
    static func measure(megabytes: Int, streamMegabytes: Int) throws -> Result {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.maximumStoredBodySize = 1 << 20
        let baseline = try child(["--child-multipart", server.baseURL.absoluteString, "0"])
        let start = Date()
        let report = try child(["--child-multipart", server.baseURL.absoluteString, String(megabytes)])
        let uploadSeconds = Date().timeIntervalSince(start)
        let received = server.receivedRequests.last?.bodyLength ?? 0
        // The download side: the server streams the bytes from a 1 MB block, so only the
        // client's memory is in question.
        let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        server.route("/stream-download") { _ in
            .init(
                headers: ["Content-Length": String(megabytes << 20), "Content-Type": "application/octet-stream"],
                body: .stream(chunked: false) { writer in for _ in 0..<megabytes { try writer.write(block) } })
        }
        let rawStart = Date()
        let raw = try child(["--child-raw-download", server.baseURL.absoluteString, String(megabytes)])
        let rawSeconds = Date().timeIntervalSince(rawStart)
        let downloadStart = Date()
        let download = try child(["--child-download", server.baseURL.absoluteString, String(megabytes)])
        let downloadSeconds = Date().timeIntervalSince(downloadStart)
        server.route("/stream-slow") { _ in
            .init(
                headers: ["Content-Length": String(streamMegabytes << 20), "Content-Type": "application/octet-stream"],
                body: .stream(chunked: false) { writer in for _ in 0..<streamMegabytes { try writer.write(block) } })
        }
        var streams: [(rss: Double, seconds: Double)] = []
        for transport in ["curl", "urlsession"] {
            let start = Date()
            let rss = try child(["--child-stream", server.baseURL.absoluteString, String(streamMegabytes), transport])
            streams.append((rss, Date().timeIntervalSince(start)))
        }
        return Result(
            megabytes: megabytes, peakRSSMegabytes: report, baselineRSSMegabytes: baseline, seconds: uploadSeconds,
            bytesReceived: received, downloadPeakRSSMegabytes: download, downloadSeconds: downloadSeconds,
            rawDownloadPeakRSSMegabytes: raw, rawDownloadSeconds: rawSeconds, streamMegabytes: streamMegabytes,
            streamCurlPeakRSSMegabytes: streams[0].rss, streamCurlSeconds: streams[0].seconds,
            streamURLSessionPeakRSSMegabytes: streams[1].rss, streamURLSessionSeconds: streams[1].seconds
        )
    }

    /// In the child: stream `megabytes` through `client.stream` (4 MB buffer) to a consumer that
    /// sleeps 10 ms per megabyte it takes, check the count, print the peak RSS in MB.
    static func runStreamChild(baseURL: URL, megabytes: Int, transport: String) async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport == "curl" ? .curl : .urlSession
        configuration.cache = nil
        let client = HTTPClient(baseURL: baseURL, configuration: configuration)
        let stream = try await client.stream("stream-slow")
        var received = 0
        var nextPause = 1 << 20
        for try await chunk in stream {
            received += chunk.count
            while received >= nextPause {
                try await Task.sleep(for: .milliseconds(10))  // the slow consumer
                nextPause += 1 << 20
            }
        }
        guard received == megabytes << 20 else { throw CocoaError(.fileReadCorruptFile) }
        print(peakRSSMegabytes())
    }

    private static func child(_ arguments: [String]) throws -> Double {
        let output = try ChildProcess.run(arguments)
        guard let value = Double(output) else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "child failed: \(output)"])
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

    /// In the child: download `megabytes` into a file through FileDownloadOperation, check
    /// its size, print the peak RSS in MB.
    static func runDownloadChild(baseURL: URL, megabytes: Int) async throws {
        let client = HTTPClient(baseURL: baseURL)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try await client.download("stream-download", to: .directory(directory))
        let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue ?? -1
        guard size == megabytes << 20 else { throw CocoaError(.fileReadCorruptFile) }
        print(peakRSSMegabytes())
    }

    /// In the child: the same download through a raw URLSession delegate writing a FileHandle.
    static func runRawDownloadChild(baseURL: URL, megabytes: Int) async throws {
        final class Writer: NSObject, URLSessionDataDelegate, @unchecked Sendable {
            // @unchecked: used only on the session's serial delegate queue.
            let handle: FileHandle
            var done: CheckedContinuation<Void, Never>?
            init(handle: FileHandle) { self.handle = handle }
            func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) { handle.write(data) }
            func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) { done?.resume() }
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-raw-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: file) }
        let writer = Writer(handle: try FileHandle(forWritingTo: file))
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: .default, delegate: writer, delegateQueue: queue)
        await withCheckedContinuation { continuation in
            queue.addOperation {
                writer.done = continuation
                session.dataTask(with: baseURL.appendingPathComponent("stream-download")).resume()
            }
        }
        print(peakRSSMegabytes())
    }

    static func peakRSSMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return -1 }
        return kilobytes / 1024
    }
}

/// The benchmark's child processes, started with the tests' launcher (no corelibs `Process`).
extension ChildProcess {
    /// Runs `executable` to its end; its exit status (a signal's number if one ended it).
    static func spawn(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let child = try ChildProcess(executable, arguments)
        child.waitUntilExit()
        return child.terminatedBySignal ? 128 + child.terminationStatus : child.terminationStatus
    }

    /// Runs this benchmark binary again with `arguments` and returns what it printed.
    static func run(_ arguments: [String]) throws -> String {
        let output = Pipe()
        let child = try ChildProcess(
            ChildProcess.currentExecutable.path, arguments, standardOutput: .pipe(output))
        let data = PipeIO.readToEnd(from: output.fileHandleForReading)
        child.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard child.terminationStatus == 0, !child.terminatedBySignal else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "child \(arguments) failed: \(text)"])
        }
        return text
    }
}

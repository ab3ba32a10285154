import Conveyor
import ConveyorTesting
import Foundation
import Synchronization

/// One step of the demo: a name, what it shows, and the code that shows it.
struct DemoStep: Sendable {
    let name: String
    let summary: String
    let run: @Sendable (DemoClient) async throws -> String
}

/// The demo's API client: the pattern Conveyor is built for, one subclass per API.
final class DemoClient: HTTPClient, @unchecked Sendable {
    // @unchecked Sendable: adds no state to HTTPClient, whose state is behind its Mutex.

    /// The embedded server, when the demo runs against one (steps may add routes to it).
    let embeddedServer: LocalHTTPServer?

    init(baseURL: URL, embeddedServer: LocalHTTPServer?) {
        self.embeddedServer = embeddedServer
        super.init(baseURL: baseURL, configuration: .default)
        setDefaultHeader("Accept", value: "application/json")
    }

    struct Echo: Decodable, Sendable {
        let args: [String: String]
        let headers: [String: String]
        let url: String
    }

    struct FormEcho: Decodable, Sendable {
        let form: [String: String]
    }

    /// A typed endpoint, async.
    func echo(_ parameters: Parameters) async throws -> Echo {
        try await get("get", parameters: parameters, as: Echo.self)
    }
}

enum DemoSteps {
    static let all: [DemoStep] = [
        DemoStep(name: "get", summary: "a JSON GET decoded into a Decodable model") { client in
            let echo = try await client.echo(["q": "conveyor", "lang": "swift"])
            return
                "args \(echo.args.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")), User-Agent \(echo.headers["User-Agent"] ?? "?")"
        },
        DemoStep(name: "callback", summary: "the AFNetworking-style callback API, with the operation returned") { client in
            let status = try await withCheckedThrowingContinuation { continuation in
                client.get(
                    "get", parameters: ["style": "callback"],
                    success: { operation, _ in
                        continuation.resume(returning: operation.response?.statusCode ?? 0)
                    },
                    failure: { _, error in
                        continuation.resume(throwing: error)
                    })
            }
            return "success block ran with status \(status)"
        },
        DemoStep(name: "form-post", summary: "a form-encoded POST echoed back") { client in
            let data = try await client.post("post", parameters: ["name": "Zoë", "city": "Zürich"])
            let form = try JSONDecoder().decode(DemoClient.FormEcho.self, from: data).form
            return "server decoded \(form.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))"
        },
        DemoStep(name: "json-post", summary: "an Encodable value sent as a JSON body and echoed back") { client in
            struct Order: Codable, Sendable, Equatable {
                let item: String
                let quantity: Int
            }
            let sent = Order(item: "espresso", quantity: 2)
            let response = try await client.response(method: .post, path: "post", body: sent, requestSerializer: JSONRequestSerializer())
            struct Echo: Decodable { let json: Order }
            let echoed = try JSONDecoder().decode(Echo.self, from: response.data).json
            guard echoed == sent else { throw DemoFailure("the server decoded \(echoed)") }
            return "server decoded \(echoed.quantity) × \(echoed.item) from application/json"
        },
        DemoStep(name: "auth", summary: "Basic auth: right credentials succeed, wrong ones fail fast (no hang)") { client in
            client.setAuthorizationHeader(username: "user", password: "passwd")
            defer { client.clearAuthorizationHeader() }
            _ = try await client.get("basic-auth/user/passwd")
            client.setAuthorizationHeader(username: "user", password: "wrong")
            let start = ContinuousClock.now
            do {
                _ = try await client.get("basic-auth/user/passwd")
                throw DemoFailure("a wrong password was accepted")
            } catch let error as ConveyorError where error.statusCode == 401 {
                return "right password: 200; wrong password: 401 after \(DemoFormat.duration(ContinuousClock.now - start))"
            }
        },
        DemoStep(name: "redirect", summary: "a chain of 3 redirects followed by Conveyor itself") { client in
            let response = try await client.response(method: .get, path: "redirect/3")
            return "\(response.metrics.redirectCount) redirects, ended at \(response.request.url?.path ?? "?") with \(response.statusCode)"
        },
        DemoStep(name: "errors", summary: "a 404 becomes a typed, readable ConveyorError") { client in
            do {
                _ = try await client.get("status/404")
                throw DemoFailure("404 did not fail")
            } catch let error as ConveyorError {
                guard error.statusCode == 404 else { throw error }
                return "\(error)"
            }
        },
        DemoStep(name: "timeout", summary: "a fractional idle timeout (0.5 s) against a slow endpoint") { client in
            var configuration = HTTPClient.Configuration.default
            configuration.idleTimeout = 0.5
            let impatient = HTTPClient(baseURL: client.baseURL!, configuration: configuration)
            let start = ContinuousClock.now
            do {
                _ = try await impatient.get("delay/3")
                throw DemoFailure("no timeout")
            } catch let error as ConveyorError where error.isTimeout {
                return "timed out after \(DemoFormat.duration(ContinuousClock.now - start)): \(error)"
            }
        },
        DemoStep(name: "cancel", summary: "cancelling the awaiting Task cancels the operation") { client in
            let task = Task { try await client.get("delay/3") }
            task.cancel()
            do {
                _ = try await task.value
                throw DemoFailure("not cancelled")
            } catch let error as ConveyorError where error.isCancelled {
                return "\(error)"
            }
        },
        DemoStep(name: "upload", summary: "a multipart upload of a generated 1 MB file, with upload progress") { client in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-demo-\(UUID().uuidString).bin")
            try Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0) }).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let bar = ProgressBar(label: "upload")
            _ = try await client.post(
                "post", parameters: ["album": "demo"],
                constructingBody: { form in
                    try form.append(fileURL: file, name: "file")
                }, uploadProgress: { _, sent, total in bar.update(sent, total) })
            bar.finish()
            return "sent \(ByteCountFormatter.string(fromByteCount: 1_000_000, countStyle: .decimal)) as multipart/form-data"
        },
        DemoStep(name: "download", summary: "a 5 MB download into an outputStream, as in AFNetworking, with a progress bar") { client in
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-demo-\(UUID().uuidString).bin").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let bar = ProgressBar(label: "download")
            // AFNetworking 1.x, line for line (the migration article shows both):
            //   AFHTTPRequestOperation *operation = [[AFHTTPRequestOperation alloc] initWithRequest:request];
            //   operation.outputStream = [NSOutputStream outputStreamToFileAtPath:path append:NO];
            //   [operation setDownloadProgressBlock:^(NSUInteger bytes, long long total, long long expected) { … }];
            //   [operation setShouldExecuteAsBackgroundTaskWithExpirationHandler:nil];
            //   [operation setCompletionBlockWithSuccess:… failure:…];
            //   [client enqueueHTTPRequestOperation:operation];
            let request = try client.request(method: .get, path: "bytes/5000000")
            let operation = HTTPRequestOperation(request: request)
            operation.outputStream = OutputStream(toFileAtPath: path, append: false)
            operation.setDownloadProgressBlock { _, total, expected in bar.update(total, expected) }
            operation.setShouldExecuteAsBackgroundTask()
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                operation.setCompletionBlock(
                    success: { _, _ in continuation.resume() }, failure: { _, error in continuation.resume(throwing: error) })
                client.enqueue(operation)  // runs with the client's settings, like an operation it built
            }
            bar.finish()
            let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
            guard size == 5_000_000 else {
                // httpbin caps /bytes at 100 kB: the step did not show what it says.
                throw DemoSkip("the server sent \(size) of 5,000,000 bytes (its /bytes has a cap; httpbin's is 102,400)")
            }
            return "\(size) bytes written through an OutputStream; \(operation.responseData?.count ?? 0) kept in memory"
        },
        DemoStep(name: "stream", summary: "a response consumed while it arrives (client.stream), printed live") { client in
            let start = ContinuousClock.now
            let stream = try await client.stream("drip", parameters: ["numbytes": 5, "duration": 1])
            var chunks = 0
            var bytes = 0
            for try await chunk in stream {
                chunks += 1
                bytes += chunk.count
                let elapsed =
                    Double((ContinuousClock.now - start).components.attoseconds) / 1e18
                    + Double((ContinuousClock.now - start).components.seconds)
                print(String(format: "  +%.2f s  %d byte%@ arrived", elapsed, chunk.count, chunk.count == 1 ? "" : "s"))
            }
            return "\(bytes) bytes in \(chunks) chunks, each handled as it arrived"
        },
        DemoStep(name: "pause-resume", summary: "a slow download paused mid-body, then resumed with Range") { client in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-demo-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let paused = ProgressLog()
            let bar = ProgressBar(label: "download")
            let request = try client.request(method: .get, path: "range/102400", parameters: ["duration": 2, "chunk_size": 4096])
            let operation = FileDownloadOperation(
                request: request, destination: .directory(directory), options: [.createIntermediateDirectories])
            let file: URL = try await withCheckedThrowingContinuation { continuation in
                operation.setDownloadProgressBlock { _, received, expected in
                    bar.update(received, expected)
                    // Pause once, a quarter of the way in; resume straight away from the bytes kept.
                    if received >= 25_600, paused.lines.isEmpty {
                        paused.add("\(received)")
                        operation.pause()
                        operation.resume()
                    }
                }
                operation.setCompletionBlock(
                    success: { operation, _ in
                        continuation.resume(returning: (operation as! FileDownloadOperation).destinationURL!)
                    }, failure: { _, error in continuation.resume(throwing: error) })
                client.enqueue(operation)
            }
            bar.finish()
            let data = try Data(contentsOf: file)
            let expected = Data((0..<102_400).map { UInt8(ascii: "a") + UInt8($0 % 26) })
            guard data == expected else { throw DemoFailure("the resumed file differs (\(data.count) bytes)") }
            // Against the embedded server the demo can show what the resumed request asked for.
            let range = client.embeddedServer?.receivedRequests.last { $0.path == "/range/102400" }?.headers["Range"]
            return
                "paused at \(paused.lines.first ?? "?") bytes, resumed\(range.map { " with Range: \($0)" } ?? ""); \(data.count) bytes, identical"
        },
        DemoStep(name: "batch", summary: "a batch of 5 requests with per-operation progress") { client in
            let requests = try (1...5).map { try client.request(method: .get, path: "get", parameters: ["n": $0]) }
            let lines = await withCheckedContinuation { continuation in
                let progress = ProgressLog()
                client.enqueueBatch(
                    requests: requests, progress: { done, total in progress.add("\(done)/\(total)") },
                    completion: { operations in
                        continuation.resume(returning: progress.lines + ["\(operations.filter { $0.error == nil }.count) succeeded"])
                    })
            }
            return lines.joined(separator: " ")
        },
        DemoStep(name: "retry", summary: "a retry policy through injected 503s: two failures, then success") { client in
            var configuration = HTTPClient.Configuration.default
            configuration.retryPolicy = RetryPolicy(maximumAttempts: 3, baseDelay: 0.1)
            let patient = HTTPClient(baseURL: client.baseURL!, configuration: configuration)
            let retries = ProgressLog()
            let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationWillRetry, object: nil, queue: nil) { note in
                retries.add("503 → attempt \(note.userInfo?["attempt"] as? Int ?? 0)")
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            guard let server = client.embeddedServer else {
                // Another server cannot be told to fail twice and then succeed.
                throw DemoSkip("needs the embedded server (a route that fails twice, then answers)")
            }
            let failures = ProgressLog()
            server.route("/flaky") { _ in
                failures.add("503")
                return failures.lines.count <= 2 ? .text("busy\n", status: 503) : .json(["ok": true])
            }
            _ = try await patient.get("flaky")
            guard retries.lines.count == 2 else { throw DemoFailure("expected 2 retries, saw \(retries.lines)") }
            return "\(retries.lines.joined(separator: ", ")), then 200 on attempt 3"
        },
        DemoStep(name: "cache", summary: "an HTTP cache hit (max-age) and a 304 revalidation (ETag), both on disk") { client in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-demo-cache-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            var configuration = HTTPClient.Configuration.default
            configuration.cache = HTTPCache(directory: directory)
            let cached = HTTPClient(baseURL: client.baseURL!, configuration: configuration)
            var sources: [String] = []
            for path in ["cache/60", "cache/60", "etag/demo-v1", "etag/demo-v1"] {
                let response = try await cached.response(method: .get, path: path)
                sources.append("\(path) → \(response.statusCode) from \(response.source)")
            }
            guard sources[1].hasSuffix("cache"), sources[3].hasSuffix("revalidatedCache") else {
                throw DemoFailure("unexpected sources: \(sources)")
            }
            return sources.joined(separator: "; ")
        },
        DemoStep(name: "logging", summary: "the debug logger, with the Authorization header redacted") { client in
            let logged = ProgressLog()
            let logger = NetworkLogger(
                sink: ClosureLogSink { entry, _ in
                    logged.add(entry)
                    print(entry.split(separator: "\n").filter { !$0.contains("body:") }.map { "    \($0)" }.joined(separator: "\n"))
                })
            logger.level = .debug
            logger.shouldLog = { $0.request.url?.path == "/headers" }
            logger.startLogging()
            defer { logger.stopLogging() }
            client.setAuthorizationHeader(token: "demo-secret-token")
            defer { client.clearAuthorizationHeader() }
            _ = try await client.get("headers")
            logger.flush()
            // The echoed body repeats the header too: it must be redacted there as well.
            guard !logged.lines.joined().contains("demo-secret-token") else { throw DemoFailure("the token was logged") }
            return "the token never appeared in the log (headers, cURL line and echoed body checked)"
        },
        DemoStep(name: "reachability", summary: "the base URL host's reachability, from the kernel's routing state") { client in
            let status = await withCheckedContinuation { continuation in
                let once = ProgressLog()
                client.setReachabilityStatusChangeHandler { status in
                    if once.lines.isEmpty {
                        once.add("\(status)")
                        continuation.resume(returning: status)
                    }
                }
            }
            client.setReachabilityStatusChangeHandler(nil)
            return "\(client.baseURL?.host ?? "?") is \(status)"
        },
        DemoStep(name: "concurrent", summary: "50 GETs in flight through one client") { client in
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 { group.addTask { _ = try await client.echo(["i": "\(index)"]) } }
                try await group.waitForAll()
            }
            return "50 responses in \(DemoFormat.duration(ContinuousClock.now - start))"
        },
    ]
}

/// Collects short notes from callbacks.
final class ProgressLog: Sendable {
    private let storage = Mutex<[String]>([])
    func add(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}

/// A step that could not show what it says against this server (a route it needs is missing or
/// capped): reported and counted as skipped, not as a success.
struct DemoSkip: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// How the demo prints numbers.
enum DemoFormat {
    /// `0.742 ms`, `1.503 s`: a duration rounded for reading.
    static func duration(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds < 1 ? String(format: "%.3g ms", seconds * 1000) : String(format: "%.3g s", seconds)
    }

    /// `1 step`, `19 steps`.
    static func count(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}

struct DemoFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

import Conveyor
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

    override init(baseURL: URL, configuration: HTTPClient.Configuration = .default) {
        super.init(baseURL: baseURL, configuration: configuration)
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
            return "args \(echo.args.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")), User-Agent \(echo.headers["User-Agent"] ?? "?")"
        },
        DemoStep(name: "callback", summary: "the AFNetworking-style callback API, with the operation returned") { client in
            let status = try await withCheckedThrowingContinuation { continuation in
                client.get("get", parameters: ["style": "callback"], success: { operation, _ in
                    continuation.resume(returning: operation.response?.statusCode ?? 0)
                }, failure: { _, error in
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
                return "right password: 200; wrong password: 401 after \(ContinuousClock.now - start)"
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
            configuration.timeout = 0.5
            let impatient = HTTPClient(baseURL: client.baseURL, configuration: configuration)
            let start = ContinuousClock.now
            do {
                _ = try await impatient.get("delay/3")
                throw DemoFailure("no timeout")
            } catch let error as ConveyorError where error.isTimeout {
                return "timed out after \(ContinuousClock.now - start): \(error)"
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
            _ = try await client.post("post", parameters: ["album": "demo"], constructingBody: { form in
                try form.append(fileURL: file, name: "file")
            }, uploadProgress: { _, sent, total in bar.update(sent, total) })
            bar.finish()
            return "sent \(ByteCountFormatter.string(fromByteCount: 1_000_000, countStyle: .decimal)) as multipart/form-data"
        },
        DemoStep(name: "download", summary: "a download streamed to a file, with a progress bar") { client in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-demo-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let bar = ProgressBar(label: "download")
            let file = try await client.download("bytes/102400", to: .directory(directory)) { _, received, expected in bar.update(received, expected) }
            bar.finish()
            let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue ?? 0
            return "\(size) bytes written to \(file.lastPathComponent)"
        },
        DemoStep(name: "batch", summary: "a batch of 5 requests with per-operation progress") { client in
            let requests = try (1...5).map { try client.request(method: .get, path: "get", parameters: ["n": $0]) }
            let lines = await withCheckedContinuation { continuation in
                let progress = ProgressLog()
                client.enqueueBatch(requests: requests, progress: { done, total in progress.add("\(done)/\(total)") },
                                    completion: { operations in
                                        continuation.resume(returning: progress.lines + ["\(operations.filter { $0.error == nil }.count) succeeded"])
                                    })
            }
            return lines.joined(separator: " ")
        },
        DemoStep(name: "retry", summary: "a retry policy against a failing endpoint: 3 attempts with backoff") { client in
            var configuration = HTTPClient.Configuration.default
            configuration.retryPolicy = RetryPolicy(maximumAttempts: 3, baseDelay: 0.1)
            let patient = HTTPClient(baseURL: client.baseURL, configuration: configuration)
            let retries = ProgressLog()
            let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationWillRetry, object: nil, queue: nil) { note in
                retries.add("attempt \(note.userInfo?["attempt"] as? Int ?? 0)")
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            do {
                _ = try await patient.get("status/503")
                throw DemoFailure("503 did not fail")
            } catch let error as ConveyorError where error.statusCode == 503 {
                guard retries.lines.count == 2 else { throw DemoFailure("expected 2 retries, saw \(retries.lines)") }
                return "\(retries.lines.joined(separator: ", ")), then gave up: \(error.statusCode!)"
            }
        },
        DemoStep(name: "cache", summary: "an HTTP cache hit (max-age) and a 304 revalidation (ETag), both on disk") { client in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-demo-cache-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            var configuration = HTTPClient.Configuration.default
            configuration.cache = HTTPCache(directory: directory)
            let cached = HTTPClient(baseURL: client.baseURL, configuration: configuration)
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
            let logger = NetworkLogger(sink: ClosureLogSink { entry, _ in
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
            return "\(client.baseURL.host ?? "?") is \(status)"
        },
        DemoStep(name: "concurrent", summary: "50 GETs in flight through one client") { client in
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 { group.addTask { _ = try await client.echo(["i": "\(index)"]) } }
                try await group.waitForAll()
            }
            return "50 responses in \(ContinuousClock.now - start)"
        },
    ]
}

/// Collects short notes from callbacks.
final class ProgressLog: Sendable {
    private let storage = Mutex<[String]>([])
    func add(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}

struct DemoFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

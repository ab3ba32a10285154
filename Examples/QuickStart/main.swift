// The README's quick start, one block per `MARK` section (scripts/check-quickstart keeps the
// two the same, and runs this program against `conveyor-demo --serve`).

// MARK: A client and a first request
import Conveyor

// Talks to the embedded server of `swift run conveyor-demo --serve 8080` (start it in another
// terminal first), or to the httpbin-compatible server whose URL you pass as the first argument.
final class HTTPBinClient: HTTPClient, @unchecked Sendable {  // one subclass per API
    static let shared = HTTPBinClient(
        baseURL: URL(string: ProcessInfo.processInfo.arguments.dropFirst().first ?? "http://127.0.0.1:8080/")!)

    override init(baseURL: URL, configuration: HTTPClient.Configuration = .default) {
        super.init(baseURL: baseURL, configuration: configuration)
        setDefaultHeader("Accept", value: "application/json")
    }

    struct Echo: Decodable, Sendable { let args: [String: String] }
    func echo(_ query: String) async throws -> Echo {
        try await get("get", parameters: ["q": query], as: Echo.self)  // throws ConveyorError (see the Errors article)
    }
}

let echo = try await HTTPBinClient.shared.echo("swift")  // async/await
print("async: q=\(echo.args["q"] ?? "")")

// AFNetworking-style blocks run on the callback queue after the call has returned: a
// command-line program must stay alive until they have run (an app's run loop does that).
await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
    HTTPBinClient.shared.get(
        "get", parameters: ["q": "blocks"],
        success: { operation, _ in
            print("blocks: HTTP \(operation.response?.statusCode ?? 0)")
            done.resume()
        },
        failure: { _, error in
            print("blocks failed: \(error)")
            done.resume()
        })
}
let client = HTTPBinClient.shared
let baseURL = client.baseURL!

// MARK: Request bodies
struct NewUser: Encodable { let name: String }
struct Echoed: Decodable, Sendable {
    let json: [String: String]?
    let form: [String: String]?
}
let created = try await client.post("post", body: NewUser(name: "Ada"), as: Echoed.self, requestSerializer: .json)
print("JSON body: name=\(created.json?["name"] ?? "")")

// Multipart: small bodies in memory, large ones streamed from a temporary file.
let photoURL = FileManager.default.temporaryDirectory.appendingPathComponent("quickstart-photo.jpg")
try Data(repeating: 0xFF, count: 300_000).write(to: photoURL)
let uploaded = try await client.post(
    "post", parameters: ["album": "2026"],
    constructingBody: { form in
        try form.append(fileURL: photoURL, name: "photo")  // name and MIME type from the file
        form.append("A caption", name: "caption")
    }, uploadProgress: { _, sent, total in if sent == total { print("multipart: sent \(total) bytes") } })
let fields = try JSONDecoder().decode(Echoed.self, from: uploaded).form ?? [:]
print("multipart: album=\(fields["album"] ?? "") caption=\(fields["caption"] ?? "")")

// MARK: Responses
client.register(JSONRequestOperation.self)  // chosen because the client's Accept is application/json
await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
    client.get(
        "json",
        success: { operation, json in
            print("JSON operation: \(type(of: operation)), keys \((json as? [String: Any])?.keys.sorted() ?? [])")
            done.resume()
        },
        failure: { _, error in
            print("JSON operation failed: \(error)")
            done.resume()
        })
}

let image = try await client.response(for: client.request(method: .get, path: "image/png"), responseSerializer: .image).value
print("image: \(image.format) \(image.pixelWidth)x\(image.pixelHeight)")

let downloads = FileManager.default.temporaryDirectory.appendingPathComponent("quickstart-downloads")
let file = try await client.download(
    "bytes/102400", to: .file(downloads.appendingPathComponent("big.bin")),
    options: [.createIntermediateDirectories, .removePreviousFile]
) { _, written, expected in
    if written == expected { print("download: \(written) of \(expected) bytes") }  // streamed to disk, never held in memory
}
print("download: saved as \(file.lastPathComponent)")

// MARK: Lifecycle
var configuration = HTTPClient.Configuration.default
configuration.retryPolicy = .attempts(3)  // 408/429/5xx and dropped connections, GET-like methods
configuration.idleTimeout = 5  // idle; fractions honoured
configuration.resourceTimeout = 30  // the whole transfer
let downloader = HTTPClient(baseURL: baseURL, configuration: configuration)

let video = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
    let operation = downloader.download(
        "range/102400", to: .directory(downloads), options: .removePreviousFile, progress: nil,
        success: { operation, _ in done.resume(returning: "\(operation.response?.statusCode ?? 0)") },
        failure: { _, error in done.resume(returning: "\(error)") })
    operation.pause()  // keeps the bytes
    operation.resume()  // continues with Range/If-Range, or starts over if the file changed
}
print("paused and resumed download: HTTP \(video)")

let requests = try (1...3).map { try downloader.request(method: .get, path: "get", parameters: ["n": $0]) }
await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
    downloader.enqueueBatch(
        requests: requests, progress: { finished, total in print("batch: \(finished)/\(total)") },
        completion: { operations in
            print("batch: all \(operations.count) finished")
            done.resume()
        })
}

// MARK: Shutdown
GracefulShutdown.install(clients: [client, downloader], timeout: 10)  // SIGTERM/SIGINT: drain, then exit 0

// MARK: Logging
#if DEBUG
    NetworkLogger.shared.level = .info  // .debug: headers and bodies too
    NetworkLogger.shared.shouldLog = NetworkLogger.hosts([baseURL.host ?? ""])  // true = log it
    NetworkLogger.shared.startLogging()
#endif
_ = try await client.response(method: .get, path: "get", parameters: ["token": "s3cr3t"])
// → GET http://127.0.0.1:8080/get?token=%3Credacted%3E          (on standard error)
// ← 200 GET http://127.0.0.1:8080/get?token=%3Credacted%3E [0.002 s, 312 B]
NetworkLogger.shared.stopLogging()

// MARK: Reachability and activity
client.setReachabilityStatusChangeHandler { status in print("reachability: \(status)") }
NetworkActivityIndicatorManager.shared.isEnabled = true
NetworkActivityIndicatorManager.shared.visibilityChangeHandler = { visible in print("activity indicator: \(visible ? "shown" : "hidden")") }

// MARK: Caching
HTTPCache.shared = HTTPCache(memoryCapacity: 4_000_000, diskCapacity: 0)  // at start-up, like NSURLCache.setSharedURLCache
var cached = HTTPClient.Configuration.default  // its cache is HTTPCache.shared
cached.cachePolicy = .returnCacheDataWhenUnreachable  // stale entries answer when offline
let feed = HTTPClient(baseURL: baseURL, configuration: cached)
let first = try await feed.response(method: .get, path: "cache/60")
let second = try await feed.response(method: .get, path: "cache/60")
print("cache: \(first.source), then \(second.source)")  // .network, .cache, .revalidatedCache (a 304) or .staleOnError

// MARK: Images
final class AvatarView: ImageDisplaying { var image: EncodedImage? }  // UIImageView works the same
let avatarView = AvatarView()
let shown = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
    avatarView.setImage(with: baseURL.appendingPathComponent("image/jpeg"), placeholder: nil) { result in  // a new call cancels the old one
        done.resume(returning: (try? result.get()).map { "\($0.format) \($0.pixelWidth)x\($0.pixelHeight)" } ?? "failed")
    }
}
print("avatar: \(shown)")
print("quick start: done")

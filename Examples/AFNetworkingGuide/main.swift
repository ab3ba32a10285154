import Conveyor
import ConveyorTesting
import Foundation
import Synchronization

// AFNetworkingGuideExample: the AFNetworking 1.x guide the design was written from, every
// sample ported to Conveyor and run against an embedded LocalHTTPServer (or SAMPLE_API_URL).
//
//   swift run AFNetworkingGuideExample

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print(
        """
        USAGE: AFNetworkingGuideExample

        Every sample of the AFNetworking 1.x guide, ported to Conveyor, run against an embedded
        server (or the server at $SAMPLE_API_URL): the client subclass, JSON operations, a
        multipart upload, an image with a placeholder, an outputStream download, the shared
        cache, the activity indicator and the logger.
        """)
    exit(0)
}

/// An image view without UIKit: what `setImageWithURL:placeholderImage:` fills in.
final class ConsoleImageView: ImageDisplaying, @unchecked Sendable {
    // @unchecked Sendable: `image` is touched only on the downloader's callback queue, as
    // ImageDisplaying documents; the example reads it after that queue has set it.
    var image: EncodedImage?
}

/// Notes taken from callbacks.
final class Notes: Sendable {
    private let storage = Mutex<[String]>([])
    func add(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}

func fail(_ message: String) -> Never {
    print("failed: \(message)")
    exit(1)
}

var embedded: LocalHTTPServer?
if ProcessInfo.processInfo.environment["SAMPLE_API_URL"] == nil {
    let server = try LocalHTTPServer.started()
    // The guide's endpoint: the JSON echo of what was sent.
    server.route("/sample/data") { request in
        .json([
            "args": Dictionary(uniqueKeysWithValues: request.queryItems.map { ($0.name, $0.value) }), "headers": request.headers.dictionary,
        ])
    }
    embedded = server
    setenv("SAMPLE_API_URL", server.baseURL.absoluteString, 1)
}

// application:didFinishLaunchingWithOptions:
// NSURLCache *URLCache = [[NSURLCache alloc] initWithMemoryCapacity:4 * 1024 * 1024 diskCapacity:20 * 1024 * 1024 diskPath:nil];
// [NSURLCache setSharedURLCache:URLCache];
HTTPCache.shared = HTTPCache(memoryCapacity: 4 * 1024 * 1024, diskCapacity: 20 * 1024 * 1024)
// [AFNetworkActivityIndicatorManager sharedManager].enabled = YES;
NetworkActivityIndicatorManager.shared.activationDelay = 0  // as 1.x: shown as soon as a request starts
NetworkActivityIndicatorManager.shared.isEnabled = true
let indicatorShown = Notes()
NetworkActivityIndicatorManager.shared.visibilityChangeHandler = { visible in if visible { indicatorShown.add("shown") } }
#if DEBUG
    // [[AFHTTPRequestOperationLogger sharedLogger] startLogging];
    NetworkLogger.shared.sink = .closure { line, _ in print("logger: \(line)") }  // standard output, beside the example's lines
    NetworkLogger.shared.startLogging()
#endif

let client = SampleAPIClient.shared
print("SampleAPIClient at \(client.baseURL?.absoluteString ?? "?")")

// getSampleDataWithPath:parameters:success:failure:
let model = await withCheckedContinuation { continuation in
    client.getSampleData(
        parameters: ["key2": "override", "key3": "value3"],
        success: { continuation.resume(returning: $0) },
        failure: { _, error in fail("getSampleData: \(error)") })
}
let merged = model.parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
print("sample data: \(merged), User-Agent \(model.userAgent)")

// networkReachabilityStatus and setReachabilityStatusChangeBlock:
let status = await withCheckedContinuation { continuation in
    let once = Notes()
    client.setReachabilityStatusChangeHandler { status in
        if once.lines.isEmpty {
            once.add("\(status)")
            continuation.resume(returning: status)
        }
    }
}
client.setReachabilityStatusChangeHandler(nil)
print("reachability: \(status)")

// -multipartFormRequestWithMethod:path:parameters:constructingBodyWithBlock: + enqueue
let upload = FileManager.default.temporaryDirectory.appendingPathComponent("guide-upload-\(UUID().uuidString).txt")
try Data("hello from the guide\n".utf8).write(to: upload)
defer { try? FileManager.default.removeItem(at: upload) }
let multipart = try client.multipartRequest(method: .post, path: "post", parameters: ["album": "guide"]) { form in
    try form.append(fileURL: upload, name: "file")
}
let uploaded: Int = await withCheckedContinuation { continuation in
    let operation = client.operation(
        with: multipart,
        success: { operation, _ in continuation.resume(returning: operation.response?.statusCode ?? 0) },
        failure: { _, error in fail("multipart: \(error)") })
    client.enqueue(operation)
}
print("multipart upload: HTTP \(uploaded)")

// [imageView setImageWithURL:[NSURL URLWithString:@"…/image.png"] placeholderImage:[UIImage imageNamed:@"placeholder"]];
let imageView = ConsoleImageView()
let placeholder = try EncodedImage(data: SampleImages.gif)
let imageURL = try client.url(for: "image/png")
let shown: EncodedImage = await withCheckedContinuation { continuation in
    imageView.setImage(with: imageURL, placeholder: placeholder) { result in
        guard case .success(let image) = result else { fail("image: \(result)") }
        continuation.resume(returning: image)
    }
}
print("image: placeholder \(placeholder.format), then \(shown.format) \(shown.pixelWidth)x\(shown.pixelHeight)")

// A download with outputStream, a progress block and a background task, then
// [client enqueueHTTPRequestOperation:operation];
let filePath = FileManager.default.temporaryDirectory.appendingPathComponent("guide-download-\(UUID().uuidString).bin").path
defer { try? FileManager.default.removeItem(atPath: filePath) }
let request = try client.request(method: .get, path: "bytes/200000")
let operation = HTTPRequestOperation(request: request)
operation.outputStream = OutputStream(toFileAtPath: filePath, append: false)
let progress = Notes()
operation.setDownloadProgressBlock { _, totalBytesRead, totalBytesExpectedToRead in
    progress.add(String(format: "%.2f", Double(totalBytesRead) / Double(totalBytesExpectedToRead)))
}
operation.setShouldExecuteAsBackgroundTask {
    // What to do when the system ends the background time.
}
await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    operation.setCompletionBlock(
        success: { _, _ in continuation.resume() },
        failure: { _, error in fail("download: \(error)") })
    client.enqueue(operation)
}
let size = (try FileManager.default.attributesOfItem(atPath: filePath)[.size] as? NSNumber)?.intValue ?? 0
print("download: \(size) bytes through outputStream, progress reached \(progress.lines.last ?? "?")")

print("activity indicator: \(indicatorShown.lines.isEmpty ? "never shown" : "shown")")
print("the guide ran to its end")
embedded?.stop()

// conveyor-bench: Conveyor against raw URLSession, measured in one process, interleaved rep by
// rep, against the in-process LocalHTTPServer. Prints medians and the Conveyor / raw ratio.
//
//   swift run -c release conveyor-bench [--requests N] [--reps N] [--download-mb N] [--memory-requests N]
//                                       [--multipart-mb N] [--stream-mb N] [--server local|nginx] [--json] [--smoke]
import Conveyor
import ConveyorTesting
import Foundation

let arguments = CommandLine.arguments
if let index = arguments.firstIndex(of: "--child-multipart") {
    // Runs in a child process, so its peak RSS is the upload's alone.
    try await MultipartMemory.runChild(baseURL: URL(string: arguments[index + 1])!, megabytes: Int(arguments[index + 2])!)
    exit(0)
}
if let index = arguments.firstIndex(of: "--child-raw-download") {
    try await MultipartMemory.runRawDownloadChild(baseURL: URL(string: arguments[index + 1])!, megabytes: Int(arguments[index + 2])!)
    exit(0)
}
if let index = arguments.firstIndex(of: "--child-requests") {
    try await RequestMemory.runChild(
        kind: arguments[index + 1], baseURL: URL(string: arguments[index + 2])!, requests: Int(arguments[index + 3])!)
    exit(0)
}
if let index = arguments.firstIndex(of: "--child-stream") {
    try await MultipartMemory.runStreamChild(
        baseURL: URL(string: arguments[index + 1])!, megabytes: Int(arguments[index + 2])!, transport: arguments[index + 3])
    exit(0)
}
if let index = arguments.firstIndex(of: "--child-download") {
    try await MultipartMemory.runDownloadChild(baseURL: URL(string: arguments[index + 1])!, megabytes: Int(arguments[index + 2])!)
    exit(0)
}
func option(_ name: String) -> Int? {
    arguments.firstIndex(of: name).flatMap { Int(arguments[min($0 + 1, arguments.count - 1)]) }
}
let smoke = arguments.contains("--smoke")
let requestCount = option("--requests") ?? (smoke ? 20 : 2000)
let reps = option("--reps") ?? (smoke ? 1 : 5)

let serverKind = arguments.firstIndex(of: "--server").map { arguments[min($0 + 1, arguments.count - 1)] } ?? "local"
let server =
    serverKind == "nginx"
    ? try BenchServer(nginxIn: FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-nginx-\(UUID().uuidString)"))
    : try BenchServer()
try server.serve("small.json", Data(#"{"id":1,"name":"conveyor","ok":true,"tags":["a","b","c"]}"#.utf8), contentType: "application/json")
let url = server.baseURL.appendingPathComponent("small.json")
let request = URLRequest(url: url)

/// A raw session with a delegate collecting bodies, as a framework would use one.
final class RawDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `pending` is only touched on the session's serial delegate queue.
    var pending: [Int: (Data, CheckedContinuation<Data, Never>)] = [:]
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        pending[dataTask.taskIdentifier]?.0.append(data)
    }
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let (data, continuation) = pending.removeValue(forKey: task.taskIdentifier) { continuation.resume(returning: data) }
    }
}
let rawDelegate = RawDelegate()
let delegateQueue = OperationQueue()
delegateQueue.maxConcurrentOperationCount = 1
let delegateSession = URLSession(configuration: .default, delegate: rawDelegate, delegateQueue: delegateQueue)
let plainSession = URLSession(configuration: .default)
var configuration = HTTPClient.Configuration.default
configuration.maximumConcurrentOperations = 16
// Like with like: corelibs URLSession caches nothing, and nginx's files carry validators.
configuration.cache = nil
configuration.transport = .urlSession
let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
configuration.transport = .curl
let curlClient = HTTPClient(baseURL: server.baseURL, configuration: configuration)

typealias Fetch = @Sendable () async throws -> Void
let clients: [(name: String, isConveyor: Bool, fetch: Fetch)] = [
    ("raw data(for:)", false, { _ = try await plainSession.data(for: request) }),
    (
        "raw completion handler", false,
        {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                plainSession.dataTask(with: request) { _, _, error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                }.resume()
            }
        }
    ),
    (
        "raw delegate session", false,
        {
            _ = await withCheckedContinuation { (continuation: CheckedContinuation<Data, Never>) in
                let task = delegateSession.dataTask(with: request)
                delegateQueue.addOperation { rawDelegate.pending[task.taskIdentifier] = (Data(), continuation) }
                delegateQueue.addBarrierBlock { task.resume() }
            }
        }
    ),
    (
        "Conveyor callback", true,
        {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                client.get(
                    "small.json", success: { _, _ in continuation.resume() }, failure: { _, error in continuation.resume(throwing: error) })
            }
        }
    ),
    ("Conveyor async", true, { _ = try await client.get("small.json") }),
    (
        "Conveyor curl callback", true,
        {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                curlClient.get(
                    "small.json", success: { _, _ in continuation.resume() }, failure: { _, error in continuation.resume(throwing: error) })
            }
        }
    ),
    ("Conveyor curl async", true, { _ = try await curlClient.get("small.json") }),
]

// --profile NAME: only that client, `--requests` sequential GETs after one warm-up, nothing
// else; for `perf` and `valgrind --tool=callgrind`. Prints the time per request on stderr.
// Benchmarks/profile runs it twice per client and prints instructions per request.
if let index = arguments.firstIndex(of: "--profile"), index + 1 < arguments.count {
    guard let entry = clients.first(where: { $0.name == arguments[index + 1] }) else {
        FileHandle.standardError.write(Data("clients: \(clients.map(\.name).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    try await entry.fetch()
    let seconds = try await measure(entry.fetch, requests: requestCount, inFlight: option("--in-flight") ?? 1)
    // On stderr, so perf and callgrind output on stdout stays the tool's own.
    FileHandle.standardError.write(Data(String(format: "%.1f µs/request\n", seconds * 1e6 / Double(requestCount)).utf8))
    server.stop()
    exit(0)
}

/// Times `requests` fetches, `inFlight` at a time. Nonisolated: top-level code runs on the main
/// actor, and a loop there would hop to the main queue and back around every request (two
/// thread wake-ups measured per request, for every client alike) — a cost of this harness,
/// not of the clients it compares.
nonisolated func measure(_ fetch: @escaping Fetch, requests requestCount: Int, inFlight: Int) async throws -> Double {
    let start = ContinuousClock.now
    if inFlight == 1 {
        for _ in 0..<requestCount { try await fetch() }
    } else {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var started = 0
            while started < min(inFlight, requestCount) {
                group.addTask { try await fetch() }
                started += 1
            }
            while try await group.next() != nil, started < requestCount {
                group.addTask { try await fetch() }
                started += 1
            }
            try await group.waitForAll()
        }
    }
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

struct Row: Codable {
    let scenario: String
    let client: String
    let medianSeconds: Double
    let microsecondsPerRequest: Double
    let ratioToRawDelegate: Double?
    let ratioToRawData: Double?
    /// Throughput against the `curl` command line (its time / this time; above 1 is faster).
    let speedVersusCurlCLI: Double?
}
var rows: [Row] = []
let commandLine = CurlCommandLine(url: url, requests: requestCount)
for (scenario, inFlight) in [("\(requestCount) sequential small GETs", 1), ("\(requestCount) small GETs, 16 in flight", 16)] {
    // Warm up connections once per client, then interleave clients rep by rep.
    for entry in clients { try await entry.fetch() }
    var samples = Array(repeating: [Double](), count: clients.count)
    var cliSamples: [Double] = []
    for _ in 0..<reps {
        for (index, entry) in clients.enumerated() {
            samples[index].append(try await measure(entry.fetch, requests: requestCount, inFlight: inFlight))
        }
        if let cli = commandLine?.seconds(inFlight: inFlight) { cliSamples.append(cli) }
    }
    let medians = samples.map { $0.sorted()[$0.count / 2] }
    let rawData = medians[0]
    let rawDelegateMedian = medians[2]
    let cliMedian = cliSamples.isEmpty ? nil : cliSamples.sorted()[cliSamples.count / 2]
    for (index, entry) in clients.enumerated() {
        rows.append(
            Row(
                scenario: scenario, client: entry.name, medianSeconds: medians[index],
                microsecondsPerRequest: medians[index] / Double(requestCount) * 1e6,
                ratioToRawDelegate: entry.isConveyor ? medians[index] / rawDelegateMedian : nil,
                ratioToRawData: entry.isConveyor ? medians[index] / rawData : nil,
                speedVersusCurlCLI: entry.isConveyor ? cliMedian.map { $0 / medians[index] } : nil))
    }
    if let cliMedian {
        rows.append(
            Row(
                scenario: scenario, client: "curl command line", medianSeconds: cliMedian,
                microsecondsPerRequest: cliMedian / Double(requestCount) * 1e6,
                ratioToRawDelegate: nil, ratioToRawData: nil, speedVersusCurlCLI: nil))
    }
}
/// The request scenarios' table, as the plain-text report shows it.
func printRows(_ rows: [Row]) {
    var scenario = ""
    for row in rows {
        if row.scenario != scenario {
            scenario = row.scenario
            print("\n\(scenario)")
        }
        var ratios =
            row.ratioToRawDelegate.map { String(format: "  %.2fx raw delegate, %.2fx raw data(for:)", $0, row.ratioToRawData!) } ?? ""
        if let rawData = row.ratioToRawData { ratios += String(format: " (%.1fx its speed)", 1 / rawData) }
        if let cli = row.speedVersusCurlCLI { ratios += String(format: ", %.2fx curl CLI speed", cli) }
        let name = row.client.padding(toLength: 24, withPad: " ", startingAt: 0)
        print("  \(name)" + String(format: " %8.3f s  %7.1f µs/request", row.medianSeconds, row.microsecondsPerRequest) + ratios)
    }
}
// --requests-only: scenarios 1-2 and nothing else (a minute or two).
if arguments.contains("--requests-only") {
    server.stop()
    printRows(rows)
    exit(0)
}
// 12,000 items encode to about 1 MB of JSON.
var comparisons: [Comparison] = []
for (label, transferClient) in [("Conveyor", client), ("Conveyor curl", curlClient)] {
    comparisons += try await Transfers.run(
        server: server, client: transferClient, label: label, megabytes: option("--download-mb") ?? (smoke ? 1 : 50),
        jsonItems: smoke ? 50 : 12_000, reps: reps)
}
server.stop()
let requestMemory = try RequestMemory.measure(requests: option("--memory-requests") ?? (smoke ? 200 : 100_000))

let multipartMegabytes = option("--multipart-mb") ?? (smoke ? 5 : 200)
let multipart = try MultipartMemory.measure(megabytes: multipartMegabytes, streamMegabytes: option("--stream-mb") ?? (smoke ? 5 : 1024))

if arguments.contains("--json") {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    struct Report: Codable {
        let rows: [Row]
        let transfers: [Comparison]
        let requestMemory: RequestMemory.Result
        let multipart: MultipartMemory.Result
    }
    let report = Report(rows: rows, transfers: comparisons, requestMemory: requestMemory, multipart: multipart)
    print(String(decoding: try encoder.encode(report), as: UTF8.self))
} else {
    print(
        "conveyor-bench: \(requestCount) requests, median of \(reps) rep(s), scenarios 1-4 against \(serverKind == "nginx" ? "nginx" : "the in-process LocalHTTPServer")\(smoke ? " (smoke mode: numbers are meaningless)" : "")"
    )
    printRows(rows)
    for comparison in comparisons {
        print("\n\(comparison.scenario)")
        print(
            "  \(comparison.raw.padding(toLength: 32, withPad: " ", startingAt: 0))"
                + String(format: " %8.3f s", comparison.rawMedianSeconds))
        print(
            "  \(comparison.conveyor.padding(toLength: 32, withPad: " ", startingAt: 0))"
                + String(format: " %8.3f s  %.2fx raw", comparison.conveyorMedianSeconds, comparison.ratio))
    }
    print("\n\(requestMemory.requests) small GETs through one client/session, each in a child process: RSS growth per request")
    print(
        String(
            format: "  raw URLSession %.3f kB, Conveyor on URLSession %.3f kB, Conveyor on curl %.3f kB",
            requestMemory.rawGrowthKilobytesPerRequest, requestMemory.conveyorGrowthKilobytesPerRequest,
            requestMemory.curlGrowthKilobytesPerRequest))
    print("\n\(multipart.megabytes) MB multipart upload from a file, and download to a file, each in a child process")
    print(
        String(
            format: "  upload:   peak RSS %.1f MB (a child that only starts a client: %.1f MB), %.2f s, server received %d bytes",
            multipart.peakRSSMegabytes, multipart.baselineRSSMegabytes, multipart.seconds, multipart.bytesReceived))
    print(
        String(
            format: "  download: peak RSS %.1f MB, %.2f s (raw URLSession delegate writing a FileHandle: %.1f MB, %.2f s)",
            multipart.downloadPeakRSSMegabytes, multipart.downloadSeconds, multipart.rawDownloadPeakRSSMegabytes,
            multipart.rawDownloadSeconds))
    print(
        "\n\(multipart.streamMegabytes) MB streamed (client.stream, 4 MB buffer) to a consumer sleeping 10 ms per MB, each in a child process"
    )
    print(
        String(
            format: "  curl: peak RSS %.1f MB, %.2f s (target: < 64 MB)   URLSession: peak RSS %.1f MB, %.2f s (corelibs cannot pause)",
            multipart.streamCurlPeakRSSMegabytes, multipart.streamCurlSeconds, multipart.streamURLSessionPeakRSSMegabytes,
            multipart.streamURLSessionSeconds))
}

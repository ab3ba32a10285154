// conveyor-bench: Conveyor against raw URLSession, measured in one process, interleaved rep by
// rep, against the in-process LocalHTTPServer. Prints medians and the Conveyor / raw ratio.
//
//   swift run -c release conveyor-bench [--requests N] [--reps N] [--download-mb N] [--memory-requests N]
//                                       [--multipart-mb N] [--stream-mb N] [--server local|nginx] [--json] [--smoke]
//                                       [--requests-only | --transfers-only] [--settle-ms N] [--scenarios TEXT]
//                                       [--many-hosts-requests N] [--outbox-items N] [--outbox-pending N]
//
// --settle-ms N waits N ms before each client's turn in the request scenarios, so connections the
// previous client left closing (corelibs URLSession opens dozens at 16 in flight) do not load the
// next one's measurement; the default (0) runs them back to back, as the issue-21 tables did.
import Conveyor
import ConveyorTesting
import Foundation
import Synchronization

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
if let index = arguments.firstIndex(of: "--child-queue-memory") {
    try await QueueDepth.runMemoryChild(
        kind: arguments[index + 1], baseURL: URL(string: arguments[index + 2])!, count: Int(arguments[index + 3])!)
    exit(0)
}
if let index = arguments.firstIndex(of: "--child-outbox-write") {
    try OutboxBench.runWriteChild(directory: arguments[index + 1], count: Int(arguments[index + 2])!)
    exit(0)
}
if let index = arguments.firstIndex(of: "--child-outbox-open") {
    try OutboxBench.runOpenChild(directory: arguments[index + 1])
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

/// Responses a Conveyor client took from a cache instead of the server: every Conveyor client
/// here runs with `cache = nil`, so anything but 0 means the comparison is not like with like.
let cacheAnswered = Atomic<Int>(0)
@Sendable func note(_ source: HTTPCache.ResponseSource?) {
    if source != .network { cacheAnswered.add(1, ordering: .relaxed) }
}

/// Says on stderr whose turn begins, so that a run that stops shows where: the rows print only at
/// the end, and a full run in session 17 sat for 7 minutes with every thread idle and nothing
/// printed (which call never returned is not known).
func progress(_ text: String) {
    FileHandle.standardError.write(Data("conveyor-bench: \(text)\n".utf8))
}

/// A Conveyor callback-API call, awaited: `send` enqueues with the given blocks.
func callback(_ send: @escaping @Sendable (@escaping HTTPRequestOperation.Success, @escaping HTTPRequestOperation.Failure) -> Void)
    -> Fetch
{
    {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            send(
                { operation, _ in
                    note(operation.metrics?.responseSource)
                    continuation.resume()
                }, { _, error in continuation.resume(throwing: error) })
        }
    }
}
func getCallback(_ client: HTTPClient) -> Fetch {
    callback { success, failure in client.get("small.json", success: success, failure: failure) }
}
func getAsync(_ client: HTTPClient) -> Fetch {
    { note(try await client.response(method: .get, path: "small.json").source) }
}

/// A callback-API request whose completion block calls `done` (on the client's callback queue).
typealias Send = @Sendable (_ done: @escaping @Sendable ((any Error)?) -> Void) -> Void
func getChained(_ client: HTTPClient) -> Send {
    { done in
        client.get(
            "small.json",
            success: { operation, _ in
                note(operation.metrics?.responseSource)
                done(nil)
            }, failure: { _, error in done(error) })
    }
}

/// Times `requests` callback-API requests, `inFlight` chains at a time, as callback code sends
/// them: each completion block starts the next request. The `callback` rows instead await each
/// completion through a continuation — a thread wake-up more per request than the async API
/// pays, which is the harness's, not the API's.
nonisolated func measureChained(_ send: @escaping Send, requests: Int, inFlight: Int) async throws -> Double {
    let start = ContinuousClock.now
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let progress = Mutex((started: 0, finished: 0, failed: false))
        @Sendable func next() {
            let go = progress.withLock { state -> Bool in
                guard state.started < requests, !state.failed else { return false }
                state.started += 1
                return true
            }
            guard go else { return }
            send { error in
                let (resumes, failure) = progress.withLock { state -> (Bool, (any Error)?) in
                    state.finished += 1
                    if let error, !state.failed {
                        state.failed = true
                        return (true, error)
                    }
                    return (!state.failed && state.finished == requests, nil)
                }
                if let failure {
                    continuation.resume(throwing: failure)
                } else if resumes {
                    continuation.resume()
                } else {
                    next()
                }
            }
        }
        for _ in 0..<min(inFlight, requests) { next() }
    }
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// What a row's time is compared with for its target.
enum Reference: String, Codable {
    case curlCLI = "curl CLI"
    case rawData = "raw data(for:)"
    /// The "Conveyor curl async" row of the same scenario: the callback API's parity target.
    case curlAsync = "Conveyor curl async"
}
/// One client in a scenario: how it sends one request, and the target its time ratio must meet.
struct Entry {
    let name: String
    let isConveyor: Bool
    var target: (reference: Reference, ratio: Double)? = nil
    let fetch: Fetch
    /// Measured as callback code runs: each completion block sends the next request (see
    /// ``measureChained(_:requests:inFlight:)``); `fetch` is then only the warm-up.
    var chained: Send? = nil
}
/// Requests sent `inFlight` at a time by each entry in turn, rep by rep, and by the curl CLI.
struct Scenario {
    let name: String
    let requests: Int
    let inFlight: Int
    let entries: [Entry]
    let commandLine: CurlCommandLine?
}

let rawEntries = [
    Entry(name: "raw data(for:)", isConveyor: false, fetch: { _ = try await plainSession.data(for: request) }),
    Entry(
        name: "raw completion handler", isConveyor: false,
        fetch: {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                plainSession.dataTask(with: request) { _, _, error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                }.resume()
            }
        }),
    Entry(name: "raw delegate session", isConveyor: false, fetch: rawDelegateFetch(request)),
]
/// `request` through the raw delegate session: what any framework on URLSession pays (corelibs
/// tells a session's delegate of every 64 kB of a body sent, on its delegate queue).
func rawDelegateFetch(_ request: URLRequest) -> Fetch {
    {
        _ = await withCheckedContinuation { (continuation: CheckedContinuation<Data, Never>) in
            let task = delegateSession.dataTask(with: request)
            delegateQueue.addOperation { rawDelegate.pending[task.taskIdentifier] = (Data(), continuation) }
            delegateQueue.addBarrierBlock { task.resume() }
        }
    }
}
/// The issue-21 targets: the URLSession transport within 5 % of raw URLSession, the curl
/// transport at or ahead of the curl command line (AsyncHTTPClient's ratios on this machine:
/// sequential 1.57x, 16 in flight 1.02x, 1 MiB upload 0.87x).
func conveyorEntries(sequential: Bool) -> [Entry] {
    [
        Entry(name: "Conveyor callback", isConveyor: true, target: (.rawData, 1.05), fetch: getCallback(client)),
        Entry(name: "Conveyor async", isConveyor: true, target: (.rawData, 1.05), fetch: getAsync(client)),
        // In flight, the callback API's target is parity with the async API's (#39 target 4).
        Entry(
            name: "Conveyor curl callback", isConveyor: true, target: sequential ? (.curlCLI, 1.25) : (.curlAsync, 1.05),
            fetch: getCallback(curlClient)),
        Entry(name: "Conveyor curl async", isConveyor: true, target: (.curlCLI, sequential ? 1.10 : 1.00), fetch: getAsync(curlClient)),
        Entry(
            name: "Conveyor curl chained", isConveyor: true, target: (.curlAsync, 1.05), fetch: getCallback(curlClient),
            chained: getChained(curlClient)),
    ]
}
let clients = rawEntries + conveyorEntries(sequential: true)

// Scenario 2b: 16 in flight through a client with the default maximumConcurrentOperations (8).
var defaultConcurrency = HTTPClient.Configuration.default
defaultConcurrency.cache = nil
defaultConcurrency.transport = .curl
let defaultConcurrencyClient = HTTPClient(baseURL: server.baseURL, configuration: defaultConcurrency)

// Scenario 5: 1 MiB POSTs, the body in memory.
/// #39 target 1: 0.90 × AsyncHTTPClient's time, which `peer-bench` measured at 0.66x the curl
/// command line's on this machine (2026-12-05), so 0.59x the command line's.
let uploadTarget = 0.59
server.acceptUploads()
let uploadCount = smoke ? 5 : 50
let uploadBody = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
let uploadFile = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-upload-\(UUID().uuidString).bin")
try uploadBody.write(to: uploadFile)
defer { try? FileManager.default.removeItem(at: uploadFile) }
var uploadRequest = URLRequest(url: server.baseURL.appendingPathComponent("upload"))
uploadRequest.httpMethod = "POST"
uploadRequest.httpBody = uploadBody
uploadRequest.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
let frozenUpload = uploadRequest
/// The same request for `upload(for:from:)`, which takes the body beside it.
let bodiless = {
    var request = uploadRequest
    request.httpBody = nil
    return request
}()
func uploadCallback(_ client: HTTPClient) -> Fetch {
    callback { success, failure in client.enqueue(client.operation(with: frozenUpload, success: success, failure: failure)) }
}
func uploadAsync(_ client: HTTPClient) -> Fetch {
    { note(try await client.response(for: frozenUpload, responseSerializer: DataResponseSerializer()).source) }
}
/// The same 1 MiB sent from the file (`request(method:path:bodyFile:)`, built per request as a
/// caller would), through the callback API and the async one.
func uploadChained(_ client: HTTPClient) -> Send {
    { done in
        client.enqueue(client.operation(with: frozenUpload, success: { _, _ in done(nil) }, failure: { _, error in done(error) }))
    }
}
func fileUploadCallback(_ client: HTTPClient) -> Fetch {
    {
        let request = try client.request(path: "upload", bodyFile: uploadFile)
        try await callback { success, failure in client.enqueue(client.operation(with: request, success: success, failure: failure)) }()
    }
}
func fileUploadAsync(_ client: HTTPClient) -> Fetch {
    {
        let request = try client.request(path: "upload", bodyFile: uploadFile)
        note(try await client.response(for: request, responseSerializer: DataResponseSerializer()).source)
    }
}

var scenarios = [
    Scenario(
        name: "\(requestCount) sequential small GETs", requests: requestCount, inFlight: 1, entries: clients,
        commandLine: CurlCommandLine(url: url, requests: requestCount)),
    Scenario(
        name: "\(requestCount) small GETs, 16 in flight (maximumConcurrentOperations 16)", requests: requestCount, inFlight: 16,
        entries: rawEntries + conveyorEntries(sequential: false), commandLine: CurlCommandLine(url: url, requests: requestCount)),
    Scenario(
        name: "\(requestCount) small GETs, 16 in flight, default maximumConcurrentOperations (8)", requests: requestCount, inFlight: 16,
        entries: [
            Entry(
                name: "Conveyor curl callback", isConveyor: true, target: (.curlCLI, 1.15), fetch: getCallback(defaultConcurrencyClient)),
            Entry(name: "Conveyor curl async", isConveyor: true, target: (.curlCLI, 1.15), fetch: getAsync(defaultConcurrencyClient)),
            Entry(
                name: "Conveyor curl chained", isConveyor: true, target: (.curlAsync, 1.05), fetch: getCallback(defaultConcurrencyClient),
                chained: getChained(defaultConcurrencyClient)),
        ], commandLine: CurlCommandLine(url: url, requests: requestCount)),
    Scenario(
        name: "\(uploadCount) sequential 1 MiB POSTs (body in memory)", requests: uploadCount, inFlight: 1,
        entries: [
            Entry(name: "raw data(for:)", isConveyor: false, fetch: { _ = try await plainSession.data(for: frozenUpload) }),
            Entry(
                name: "raw upload(for:from:)", isConveyor: false,
                fetch: { _ = try await plainSession.upload(for: bodiless, from: uploadBody) }),
            Entry(name: "raw delegate session", isConveyor: false, fetch: rawDelegateFetch(frozenUpload)),
            Entry(name: "Conveyor async", isConveyor: true, target: (.rawData, 1.05), fetch: uploadAsync(client)),
            Entry(name: "Conveyor curl callback", isConveyor: true, target: (.curlCLI, uploadTarget), fetch: uploadCallback(curlClient)),
            Entry(name: "Conveyor curl async", isConveyor: true, target: (.curlCLI, uploadTarget), fetch: uploadAsync(curlClient)),
            Entry(
                name: "Conveyor curl chained", isConveyor: true, target: (.curlCLI, uploadTarget), fetch: uploadCallback(curlClient),
                chained: uploadChained(curlClient)),
            Entry(
                name: "Conveyor curl callback file", isConveyor: true, target: (.curlCLI, uploadTarget),
                fetch: fileUploadCallback(curlClient)),
            Entry(name: "Conveyor curl async file", isConveyor: true, target: (.curlCLI, uploadTarget), fetch: fileUploadAsync(curlClient)),
        ],
        commandLine: CurlCommandLine(uploading: uploadFile, to: server.baseURL.appendingPathComponent("upload"), requests: uploadCount)),
]

// Scale: 100 origins round robin, 16 in flight (nginx listens on 127.0.0.1-100; the in-process
// server only on 127.0.0.1). Each origin is a libcurl connection-cache key of its own: a cache
// smaller than the origins in use closes a connection for every request.
let hostCount = 100
let manyHostsRequests = option("--many-hosts-requests") ?? (smoke ? 200 : 10_000)
let hostURLs = (1...hostCount).map { URL(string: "http://127.0.0.\($0):\(server.baseURL.port ?? 80)/small.json")! }
let roundRobin = Atomic<Int>(0)
@Sendable func nextHost() -> URL { hostURLs[roundRobin.add(1, ordering: .relaxed).newValue % hostCount] }
func manyHostsAsync(_ client: HTTPClient) -> Fetch {
    { note(try await client.response(method: .get, path: nextHost().absoluteString).source) }
}
if serverKind == "nginx" {
    scenarios.append(
        Scenario(
            name: "\(manyHostsRequests) small GETs, 16 in flight, round robin over \(hostCount) hosts", requests: manyHostsRequests,
            inFlight: 16,
            entries: [
                Entry(name: "raw 100 hosts", isConveyor: false, fetch: { _ = try await plainSession.data(from: nextHost()) }),
                Entry(name: "Conveyor 100 hosts", isConveyor: true, fetch: manyHostsAsync(client)),
                Entry(name: "Conveyor curl 1 host", isConveyor: true, fetch: getAsync(curlClient)),
                Entry(name: "Conveyor curl 100 hosts", isConveyor: true, fetch: manyHostsAsync(curlClient)),
            ], commandLine: nil))
}

// Observing and routing (issue 40): the same GETs through a client with three event monitors
// that do nothing (target: within 2 % of the plain client), over nginx's Unix socket, and
// through nginx as an HTTP forward proxy to itself.
struct NoOpMonitor: EventMonitor {}
var monitoredConfiguration = configuration
monitoredConfiguration.transport = .curl
monitoredConfiguration.eventMonitors = [NoOpMonitor(), NoOpMonitor(), NoOpMonitor()]
let monitoredClient = HTTPClient(baseURL: server.baseURL, configuration: monitoredConfiguration)
var reachEntries = [
    Entry(name: "Conveyor curl async", isConveyor: true, fetch: getAsync(curlClient)),
    Entry(name: "Conveyor curl 3 monitors", isConveyor: true, target: (.curlAsync, 1.02), fetch: getAsync(monitoredClient)),
]
if let socket = server.unixSocketPath {
    var socketConfiguration = configuration
    socketConfiguration.transport = .curl
    socketConfiguration.unixSocketPath = socket
    let socketClient = HTTPClient(baseURL: URL(string: "http://localhost/")!, configuration: socketConfiguration)
    reachEntries.append(Entry(name: "Conveyor curl via socket", isConveyor: true, fetch: getAsync(socketClient)))
}
if let proxyPort = server.proxyPort {
    var proxyConfiguration = configuration
    proxyConfiguration.transport = .curl
    var proxy = HTTPClient.Proxy.http(host: "127.0.0.1", port: proxyPort)
    proxy.bypassedHosts = []  // the origin is on loopback, which the default list bypasses
    proxyConfiguration.proxy = proxy
    let proxyClient = HTTPClient(baseURL: server.baseURL, configuration: proxyConfiguration)
    reachEntries.append(Entry(name: "Conveyor curl via proxy", isConveyor: true, fetch: getAsync(proxyClient)))
}
scenarios.append(
    Scenario(
        name: "\(requestCount) small GETs, 16 in flight: event monitors, a Unix socket, a proxy", requests: requestCount, inFlight: 16,
        entries: reachEntries, commandLine: nil))

// HTTP/2 over TLS (nginx's HTTPS port): 100 requests in flight multiplexed on one connection.
// Every response's protocol is checked; one that is not HTTP/2 is counted and reported.
let http2Requests = smoke ? 200 : 2000
let notHTTP2 = Atomic<Int>(0)
@Sendable func noteProtocol(_ metrics: OperationMetrics?) {
    if metrics?.transfer?.httpVersion != "HTTP/2" { notHTTP2.add(1, ordering: .relaxed) }
}
if let tlsBaseURL = server.tlsBaseURL, let authority = server.certificateAuthority {
    var http2Configuration = configuration
    http2Configuration.transport = .curl
    http2Configuration.maximumConcurrentOperations = 100
    http2Configuration.tls.certificateAuthorities = [.pemFile(authority)]
    let http2Client = HTTPClient(baseURL: tlsBaseURL, configuration: http2Configuration)
    scenarios.append(
        Scenario(
            name: "\(http2Requests) small GETs over HTTPS with HTTP/2, 100 in flight", requests: http2Requests, inFlight: 100,
            entries: [
                Entry(
                    name: "Conveyor curl callback", isConveyor: true, target: (.curlCLI, 1.10),
                    fetch: callback { success, failure in
                        http2Client.get(
                            "small.json",
                            success: { operation, value in
                                noteProtocol(operation.metrics)
                                success(operation, value)
                            }, failure: failure)
                    }),
                Entry(
                    name: "Conveyor curl async", isConveyor: true, target: (.curlCLI, 1.10),
                    fetch: {
                        let response = try await http2Client.response(method: .get, path: "small.json")
                        note(response.source)
                        noteProtocol(response.metrics)
                    }),
            ],
            commandLine: CurlCommandLine(
                http2: tlsBaseURL.appendingPathComponent("small.json"), authority: authority, requests: http2Requests)))
}

// --profile NAME: only that client, `--requests` sequential GETs after one warm-up, nothing
// else; for `perf` and `valgrind --tool=callgrind`. Prints the time per request on stderr.
// Benchmarks/profile runs it twice per client and prints instructions per request.
// "NAME upload" profiles that client's 1 MiB POSTs instead, "NAME http2" its GETs over HTTP/2
// (with `--server nginx`; give `--in-flight 100` as the scenario does).
if let index = arguments.firstIndex(of: "--profile"), index + 1 < arguments.count {
    let wanted = arguments[index + 1]
    func renamed(_ entries: [Entry], _ suffix: String) -> [Entry] {
        entries.map { Entry(name: $0.name + suffix, isConveyor: $0.isConveyor, fetch: $0.fetch, chained: $0.chained) }
    }
    let profiled =
        clients + renamed(scenarios[3].entries, " upload")
        + renamed(scenarios.first { $0.name.contains("HTTP/2") }?.entries ?? [], " http2")
    guard let entry = profiled.first(where: { $0.name == wanted }) else {
        FileHandle.standardError.write(Data("clients: \(profiled.map(\.name).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    try await entry.fetch()
    let inFlight = option("--in-flight") ?? 1
    let seconds =
        if let chained = entry.chained {
            try await measureChained(chained, requests: requestCount, inFlight: inFlight)
        } else {
            try await measure(entry.fetch, requests: requestCount, inFlight: inFlight)
        }
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
    /// This row's time over raw `data(for:)`'s in the same scenario (Conveyor rows).
    let ratioToRawData: Double?
    /// This row's time over the curl command line's (Conveyor rows); below 1 is faster.
    let ratioToCurlCLI: Double?
    /// The target, e.g. "≤ 1.10x curl CLI", and whether the median met it.
    let target: String?
    let targetMet: Bool?
    /// New connections the server accepted during each rep (after the warm-up).
    let newConnections: [Int]?
    /// CPU time (user + system, getrusage) per request: this process's for a client (the server
    /// is nginx or in-process: only with nginx is it the client's alone), the child's for the CLI.
    var cpuMicrosecondsPerRequest: Double? = nil
    /// This row's time over the "Conveyor curl async" row's in the same scenario (the rows whose
    /// target is parity with the async API).
    var ratioToAsync: Double? = nil
}

/// User + system CPU seconds of this process (`RUSAGE_SELF`) or of its waited-for children.
func cpuSeconds(children: Bool = false) -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t((children ? RUSAGE_CHILDREN : RUSAGE_SELF).rawValue), &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
var rows: [Row] = []
// --transfers-only: the downloads and the JSON body (scenarios 3-4) and nothing else.
let transfersOnly = arguments.contains("--transfers-only")
// --scenarios TEXT: only the request scenarios whose name contains TEXT (e.g. "hosts").
let scenarioFilter = arguments.firstIndex(of: "--scenarios").map { arguments[min($0 + 1, arguments.count - 1)] }
for scenario in transfersOnly ? [] : scenarios where scenarioFilter.map({ scenario.name.contains($0) }) ?? true {
    // Warm up each client's connections at the scenario's concurrency (a later rep that still
    // opens connections shows a pool too small to keep them), then interleave clients rep by rep.
    for entry in scenario.entries {
        progress("\(scenario.name): warming up \(entry.name)")
        _ = try await measure(entry.fetch, requests: 4 * scenario.inFlight, inFlight: scenario.inFlight)
    }
    var samples = Array(repeating: [Double](), count: scenario.entries.count)
    var cpuSamples = Array(repeating: [Double](), count: scenario.entries.count)
    var connections = Array(repeating: [Int](), count: scenario.entries.count)
    var cliSamples: [Double] = []
    var cliCPUSamples: [Double] = []
    var cliConnections: [Int] = []
    for rep in 0..<reps {
        for (index, entry) in scenario.entries.enumerated() {
            progress("\(scenario.name): rep \(rep + 1), \(entry.name)")
            if let settle = option("--settle-ms") { try await Task.sleep(for: .milliseconds(settle)) }
            let cpuBefore = cpuSeconds()
            let (seconds, opened) = try await server.newConnections {
                if let chained = entry.chained {
                    try await measureChained(chained, requests: scenario.requests, inFlight: scenario.inFlight)
                } else {
                    try await measure(entry.fetch, requests: scenario.requests, inFlight: scenario.inFlight)
                }
            }
            cpuSamples[index].append(cpuSeconds() - cpuBefore)
            samples[index].append(seconds)
            if let opened { connections[index].append(opened) }
        }
        progress("\(scenario.name): rep \(rep + 1), curl command line")
        let cliCPUBefore = cpuSeconds(children: true)
        let (cli, opened) = await server.newConnections { scenario.commandLine?.seconds(inFlight: scenario.inFlight) }
        if let cli {
            cliSamples.append(cli)
            cliCPUSamples.append(cpuSeconds(children: true) - cliCPUBefore)
        }
        if let opened { cliConnections.append(opened) }
    }
    func median(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.sorted()[values.count / 2] }
    let medians = samples.map { median($0)! }
    let rawData = scenario.entries.firstIndex { $0.name == "raw data(for:)" }.map { medians[$0] }
    let cliMedian = median(cliSamples)
    for (index, entry) in scenario.entries.enumerated() {
        let ratioToRaw = entry.isConveyor ? rawData.map { medians[index] / $0 } : nil
        let ratioToCLI = entry.isConveyor ? cliMedian.map { medians[index] / $0 } : nil
        let asyncMedian = scenario.entries.firstIndex { $0.name == Reference.curlAsync.rawValue }.map { medians[$0] }
        let ratioToAsync = entry.target?.reference == .curlAsync ? asyncMedian.map { medians[index] / $0 } : nil
        let measured = entry.target.flatMap {
            switch $0.reference {
            case .curlCLI: ratioToCLI
            case .rawData: ratioToRaw
            case .curlAsync: ratioToAsync
            }
        }
        rows.append(
            Row(
                scenario: scenario.name, client: entry.name, medianSeconds: medians[index],
                microsecondsPerRequest: medians[index] / Double(scenario.requests) * 1e6, ratioToRawData: ratioToRaw,
                ratioToCurlCLI: ratioToCLI, target: entry.target.map { String(format: "≤ %.2fx %@", $0.ratio, $0.reference.rawValue) },
                targetMet: measured.map { $0 <= entry.target!.ratio },
                newConnections: connections[index].isEmpty ? nil : connections[index],
                cpuMicrosecondsPerRequest: median(cpuSamples[index]).map { $0 / Double(scenario.requests) * 1e6 },
                ratioToAsync: ratioToAsync))
    }
    if let cliMedian {
        rows.append(
            Row(
                scenario: scenario.name, client: "curl command line", medianSeconds: cliMedian,
                microsecondsPerRequest: cliMedian / Double(scenario.requests) * 1e6, ratioToRawData: nil, ratioToCurlCLI: nil,
                target: nil, targetMet: nil, newConnections: cliConnections.isEmpty ? nil : cliConnections,
                cpuMicrosecondsPerRequest: median(cliCPUSamples).map { $0 / Double(scenario.requests) * 1e6 }))
    }
}
/// The request scenarios' table, as the plain-text report shows it.
func printRows(_ rows: [Row]) {
    print(
        "Every Conveyor client runs with Configuration.cache = nil (like raw URLSession on Linux, which caches nothing); "
            + "responses answered from a cache: \(cacheAnswered.load(ordering: .relaxed)); "
            + "HTTP/2 scenario responses not over HTTP/2: \(notHTTP2.load(ordering: .relaxed))")
    var scenario = ""
    for row in rows {
        if row.scenario != scenario {
            scenario = row.scenario
            print("\n\(scenario)")
        }
        var ratios = ""
        if let raw = row.ratioToRawData { ratios += String(format: "  %.2fx raw data(for:)", raw) }
        if let cli = row.ratioToCurlCLI { ratios += String(format: "  %.2fx curl CLI", cli) }
        if let parity = row.ratioToAsync { ratios += String(format: "  %.2fx curl async", parity) }
        if let target = row.target, let met = row.targetMet { ratios += "  [target \(target): \(met ? "met" : "MISSED")]" }
        if let cpu = row.cpuMicrosecondsPerRequest { ratios += String(format: "  CPU %.1f µs/request", cpu) }
        if let connections = row.newConnections {
            ratios += "  new connections per rep: " + connections.map(String.init).joined(separator: " ")
        }
        let name = row.client.padding(toLength: 24, withPad: " ", startingAt: 0)
        print("  \(name)" + String(format: " %8.3f s  %8.1f µs/request", row.medianSeconds, row.microsecondsPerRequest) + ratios)
    }
}
/// One transfer comparison, as the plain-text report shows it.
func printComparison(_ comparison: Comparison) {
    print("\n\(comparison.scenario)")
    print(
        "  \(comparison.raw.padding(toLength: 36, withPad: " ", startingAt: 0))"
            + String(format: " %8.3f s", comparison.rawMedianSeconds))
    print(
        "  \(comparison.conveyor.padding(toLength: 36, withPad: " ", startingAt: 0))"
            + String(format: " %8.3f s  %.2fx raw", comparison.conveyorMedianSeconds, comparison.ratio)
            + (comparison.ratioToCLI.map { ratio in
                String(format: "  %.2fx curl CLI (%.3f s)", ratio, comparison.cliMedianSeconds!)
                    + (comparison.cliTarget.map {
                        String(format: "  [target ≤ %.2fx curl CLI: %@]", $0, ratio <= $0 ? "met" : "MISSED")
                    } ?? "")
            } ?? ""))
}
// --requests-only: the request scenarios (GETs and uploads) and nothing else (a few minutes).
if arguments.contains("--requests-only") {
    server.stop()
    printRows(rows)
    exit(0)
}
// 12,000 items encode to about 1 MB of JSON.
var comparisons: [Comparison] = []
for (label, transferClient) in [("Conveyor", client), ("Conveyor curl", curlClient)] {
    progress("transfers: \(label)")
    comparisons += try await Transfers.run(
        server: server, client: transferClient, label: label, megabytes: option("--download-mb") ?? (smoke ? 1 : 50),
        jsonItems: smoke ? 50 : 12_000, reps: reps, isCurl: transferClient === curlClient)
}
let queueDepth =
    arguments.contains("--no-queue-depth")
    ? nil : try await QueueDepth.measure(baseURL: server.baseURL, operations: option("--queued") ?? (smoke ? 1000 : 100_000))
server.stop()
if transfersOnly {
    for comparison in comparisons { printComparison(comparison) }
    exit(0)
}
progress("memory per request, multipart, outbox")
let requestMemory = try RequestMemory.measure(requests: option("--memory-requests") ?? (smoke ? 200 : 100_000))

let multipartMegabytes = option("--multipart-mb") ?? (smoke ? 5 : 200)
let multipart = try MultipartMemory.measure(megabytes: multipartMegabytes, streamMegabytes: option("--stream-mb") ?? (smoke ? 5 : 1024))
let outbox = try await OutboxBench.measure(
    items: option("--outbox-items") ?? (smoke ? 50 : 2000), pending: option("--outbox-pending") ?? (smoke ? 1000 : 100_000))

if arguments.contains("--json") {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    struct Report: Codable {
        let rows: [Row]
        let transfers: [Comparison]
        let requestMemory: RequestMemory.Result
        let multipart: MultipartMemory.Result
        let outbox: OutboxBench.Result
        let queueDepth: QueueDepth.Result?
    }
    let report = Report(
        rows: rows, transfers: comparisons, requestMemory: requestMemory, multipart: multipart, outbox: outbox, queueDepth: queueDepth)
    print(String(decoding: try encoder.encode(report), as: UTF8.self))
} else {
    print(
        "conveyor-bench: \(requestCount) requests, median of \(reps) rep(s), scenarios 1-4 against \(serverKind == "nginx" ? "nginx" : "the in-process LocalHTTPServer")\(smoke ? " (smoke mode: numbers are meaningless)" : "")"
    )
    printRows(rows)
    for comparison in comparisons { printComparison(comparison) }
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
    print("\nOutbox (in-process LocalHTTPServer, 200-byte JSON bodies, \(outbox.items) items)")
    print(
        String(
            format:
                "  accept: %.0f items/s (record with the body inside written in place and fsynced); a plain write + fsync loop: %.0f files/s (%.2fx); write + fsync + rename, interleaved in the same directory: %.0f files/s (%.2fx) [target ≥ 0.80x: %@]; with the directory fsynced too: %.0f files/s (%.2fx)",
            outbox.acceptedPerSecond, outbox.plainWriteFsyncPerSecond, outbox.acceptedPerSecond / outbox.plainWriteFsyncPerSecond,
            outbox.plainWriteFsyncRenamePerSecond, outbox.acceptedPerSecond / outbox.plainWriteFsyncRenamePerSecond,
            outbox.acceptedPerSecond / outbox.plainWriteFsyncRenamePerSecond >= 0.80 ? "met" : "MISSED",
            outbox.plainWriteFsyncRenameSyncDirectoryPerSecond,
            outbox.acceptedPerSecond / outbox.plainWriteFsyncRenameSyncDirectoryPerSecond))
    print(
        String(
            format:
                "  deliver in order: %.3f s (%.2fx the client's sequential POSTs, %.3f s); 8 at a time: %.3f s (%.2fx 8 in flight, %.3f s)",
            outbox.outboxInOrderSeconds, outbox.outboxInOrderSeconds / outbox.directSequentialSeconds, outbox.directSequentialSeconds,
            outbox.outboxEightConcurrentSeconds, outbox.outboxEightConcurrentSeconds / outbox.directEightInFlightSeconds,
            outbox.directEightInFlightSeconds))
    print(
        String(
            format:
                "  %d pending items: written in %.1f s (writer's peak RSS %.1f MB); an outbox opened on them: RSS %.1f MB (on an empty one: %.1f MB)",
            outbox.pendingItems, outbox.pendingWriteSeconds, outbox.writerPeakRSSMegabytes, outbox.openedWithPendingRSSMegabytes,
            outbox.openedEmptyRSSMegabytes))
    if let queueDepth {
        print("\n\(queueDepth.operations) GETs enqueued at once, one curl client, 16 operations at a time")
        print(
            String(
                format:
                    "  callback: enqueue %.1f µs per operation, %.1f µs per request   async: %.1f µs per call to start, %.1f µs per request",
                queueDepth.callbackEnqueueMicroseconds, queueDepth.callbackMicrosecondsPerRequest, queueDepth.asyncEnqueueMicroseconds,
                queueDepth.asyncMicrosecondsPerRequest))
        print(
            String(
                format:
                    "  memory while waiting (queue suspended, child process): %.2f kB per queued operation, %.2f kB per pending async call",
                queueDepth.kilobytesPerQueuedOperation, queueDepth.kilobytesPerPendingAsyncCall))
    }
}

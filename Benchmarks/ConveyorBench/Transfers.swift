import Conveyor
import ConveyorTestSupport
import ConveyorTesting
import Foundation

/// One Conveyor-versus-raw comparison: medians of interleaved reps, and their ratio.
struct Comparison: Codable {
    let scenario: String
    let raw: String
    let rawMedianSeconds: Double
    let conveyor: String
    let conveyorMedianSeconds: Double
    /// The curl command line doing the same transfer (its process start included), when run.
    var cliMedianSeconds: Double? = nil
    /// The largest ratio of Conveyor's time to the command line's that meets the target.
    var cliTarget: Double? = nil
    var ratio: Double { conveyorMedianSeconds / rawMedianSeconds }
    var ratioToCLI: Double? { cliMedianSeconds.map { conveyorMedianSeconds / $0 } }

    enum CodingKeys: String, CodingKey {
        case scenario, raw, rawMedianSeconds, conveyor, conveyorMedianSeconds, cliMedianSeconds, cliTarget
    }
}

enum Transfers {
    typealias Run = @Sendable () async throws -> Void

    static func seconds(_ run: Run) async throws -> Double {
        let start = ContinuousClock.now
        try await run()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Runs raw and Conveyor alternately, `reps` times each after a warm-up, and compares medians.
    /// With `commandLine`, the curl command line runs in each rep too, and `cliTarget` is the
    /// ratio to its time that Conveyor must meet.
    static func compare(
        _ scenario: String, reps: Int, raw: (String, Run), conveyor: (String, Run), commandLine: CurlCommandLine? = nil,
        cliTarget: Double? = nil
    ) async throws -> Comparison {
        try await raw.1()
        try await conveyor.1()
        var rawSamples: [Double] = []
        var conveyorSamples: [Double] = []
        var cliSamples: [Double] = []
        for _ in 0..<reps {
            rawSamples.append(try await seconds(raw.1))
            conveyorSamples.append(try await seconds(conveyor.1))
            if let cli = commandLine?.seconds() { cliSamples.append(cli) }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        return Comparison(
            scenario: scenario, raw: raw.0, rawMedianSeconds: median(rawSamples),
            conveyor: conveyor.0, conveyorMedianSeconds: median(conveyorSamples),
            cliMedianSeconds: cliSamples.isEmpty ? nil : median(cliSamples), cliTarget: cliSamples.isEmpty ? nil : cliTarget)
    }

    /// Scenarios 3 and 4: a large download into memory and to a file, and a 1 MB JSON body decoded.
    /// `isCurl`: the curl transport's rows are also compared with the curl command line, with
    /// issue 21's targets (into memory ≤ 1.65x its `-o /dev/null` time, to a file ≤ 0.95x).
    static func run(
        server: BenchServer, client: HTTPClient, label: String, megabytes: Int, jsonItems: Int, reps: Int, isCurl: Bool
    ) async throws -> [Comparison] {
        let body = Data((0..<(megabytes << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) })
        try server.serve("large.bin", body, contentType: "application/octet-stream")
        struct Item: Codable, Sendable {
            let id: Int
            let name: String
            let tags: [String]
            let score: Double
            let active: Bool
        }
        let items = (0..<jsonItems).map { Item(id: $0, name: "item \($0)", tags: ["a", "b"], score: Double($0) / 3, active: $0 % 2 == 0) }
        let json = try JSONEncoder().encode(items)
        try server.serve("items.json", json, contentType: "application/json")
        let session = URLSession(configuration: .default)
        let large = server.baseURL.appendingPathComponent("large.bin")
        let itemsURL = server.baseURL.appendingPathComponent("items.json")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var results: [Comparison] = []
        results.append(
            try await compare(
                "\(megabytes) MB download into memory", reps: reps,
                raw: ("raw data(for:)", { _ = try await session.data(from: large) }),
                conveyor: ("\(label) get", { _ = try await client.get("large.bin") }),
                commandLine: isCurl ? CurlCommandLine(downloading: large, to: "/dev/null") : nil, cliTarget: 1.65))
        results.append(
            try await compare(
                "\(megabytes) MB download to a file", reps: reps,
                raw: (
                    "raw download(for:)",
                    {
                        let (file, _) = try await session.download(from: large)
                        try? FileManager.default.removeItem(at: file)
                    }
                ),
                conveyor: (
                    "\(label) FileDownloadOperation",
                    {
                        let file = try await client.download(
                            "large.bin", to: .directory(directory), options: [.createIntermediateDirectories, .removePreviousFile])
                        try? FileManager.default.removeItem(at: file)
                    }
                ),
                commandLine: isCurl ? CurlCommandLine(downloading: large, to: directory.appendingPathComponent("cli.bin").path) : nil,
                cliTarget: 0.95))
        results.append(
            try await compare(
                "\(json.count / 1000) kB JSON into Decodable models", reps: reps,
                raw: (
                    "raw data(for:) + JSONDecoder",
                    {
                        let (data, _) = try await session.data(from: itemsURL)
                        _ = try JSONDecoder().decode([Item].self, from: data)
                    }
                ),
                conveyor: ("\(label) get(as:)", { _ = try await client.get("items.json", as: [Item].self) })))
        return results
    }

}

/// Scenario 6: memory growth over many requests through one client, in child processes.
enum RequestMemory {
    struct Result: Codable {
        let requests: Int
        let rawGrowthKilobytesPerRequest: Double
        let conveyorGrowthKilobytesPerRequest: Double
        let curlGrowthKilobytesPerRequest: Double
    }

    static func measure(requests: Int) throws -> Result {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.maximumStoredBodySize = 0
        // Recording 100k requests would grow the parent, not the children; keep the log small.
        server.route("/tiny") { _ in .text("ok") }
        let raw = try child("raw", server: server, requests: requests)
        server.clearReceivedRequests()
        let conveyor = try child("conveyor", server: server, requests: requests)
        server.clearReceivedRequests()
        let curl = try child("conveyor-curl", server: server, requests: requests)
        return Result(
            requests: requests, rawGrowthKilobytesPerRequest: raw, conveyorGrowthKilobytesPerRequest: conveyor,
            curlGrowthKilobytesPerRequest: curl)
    }

    private static func child(_ kind: String, server: LocalHTTPServer, requests: Int) throws -> Double {
        Double(try ChildProcess.run(["--child-requests", kind, server.baseURL.absoluteString, String(requests)])) ?? -1
    }

    /// In the child: 1,000 warm-up requests, then `requests` more; prints the RSS growth per
    /// request in kB, from /proc/self/status VmRSS.
    static func runChild(kind: String, baseURL: URL, requests: Int) async throws {
        let session = URLSession(configuration: .default)
        var configuration = HTTPClient.Configuration()
        configuration.transport = kind == "conveyor-curl" ? .curl : .urlSession
        let client = HTTPClient(baseURL: baseURL, configuration: configuration)
        let url = baseURL.appendingPathComponent("tiny")
        let raw: @Sendable () async throws -> Void = { _ = try await session.data(from: url) }
        let conveyor: @Sendable () async throws -> Void = { _ = try await client.get("tiny") }
        let fetch = kind == "raw" ? raw : conveyor
        for _ in 0..<min(1000, requests) { try await fetch() }
        let before = residentKilobytes()
        for _ in 0..<requests { try await fetch() }
        print((residentKilobytes() - before) / Double(requests))
    }

    static func residentKilobytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return -1 }
        return Double(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
}

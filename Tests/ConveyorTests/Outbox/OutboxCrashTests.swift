import ConveyorLocking
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

@Suite("Outbox: SIGKILL at random moments loses nothing and applies nothing twice", .timeLimit(.minutes(3)))
struct OutboxCrashTests {
    /// One run of the helper's `outbox` scenario: its process and its output lines.
    final class Child: Sendable {
        let process: Process
        let lines: AsyncStream<String>

        init(_ server: LocalHTTPServer, directory: URL, count: Int, transport: String, bodyBytes: Int) throws {
            let helper = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
                .appendingPathComponent("ConveyorTestHelper")
            process = Process()
            process.executableURL = helper
            process.arguments = ["outbox", server.baseURL.absoluteString, directory.path, "\(count)", transport, "\(bodyBytes)"]
            let pipe = Pipe()
            process.standardOutput = pipe
            let stream = AsyncStream.makeStream(of: String.self)
            lines = stream.stream
            let handle = pipe.fileHandleForReading
            Thread.detachNewThread {
                var buffer = Data()
                while true {
                    let chunk = PipeIO.readChunk(from: handle)
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        stream.continuation.yield(String(decoding: buffer[..<newline], as: UTF8.self))
                        buffer.removeSubrange(...newline)
                    }
                }
                stream.continuation.finish()
            }
            try process.run()
        }

        func kill() { Foundation.kill(process.processIdentifier, SIGKILL) }

        /// Waits for the process to end without blocking a thread of the cooperative pool.
        func exited() async {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread { [process] in
                    process.waitUntilExit()
                    done.resume()
                }
            }
        }
    }

    /// Where a trial's first run is killed.
    enum Moment: CaseIterable, CustomStringConvertible {
        /// Right after `send` returned for a random item: the next one is being written.
        case whileWriting
        /// After a random delay once the first item was accepted: writing, uploading, anywhere.
        case atRandom
        /// Right after a random operation finished: the server answered, the result is not
        /// (or only just) handed over.
        case afterAnswer

        var description: String {
            switch self {
            case .whileWriting: "while writing"
            case .atRandom: "at random"
            case .afterAnswer: "after an answer"
            }
        }
    }

    /// What one trial saw.
    struct Trial {
        var accepted: [String] = []
        /// id → (status, redelivery) per report, in order.
        var reports: [String: [(status: String, redelivery: Bool)]] = [:]
        var lines: [String] = []

        mutating func read(_ line: String) {
            lines.append(line)
            let fields = line.split(separator: " ").map(String.init)
            if fields.first == "accepted", fields.count == 2 { accepted.append(fields[1]) }
            if fields.first == "result", fields.count >= 4 {
                reports[fields[1], default: []].append((fields[2], fields[3] == "1"))
            }
        }
    }

    @Test("75 trials, both transports: every accepted item delivered and reported, each key applied once, nothing left on disk")
    func sigkill() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let inbox = IdempotentInbox(server)
        var killsLanded = 0
        for number in 0..<75 {
            let moment = Moment.allCases[number % Moment.allCases.count]
            let transport = number % 2 == 0 ? "curl" : "urlsession"
            let count = Int.random(in: 3...8)
            let bodyBytes = [100, 4_000, 64_000][Int.random(in: 0..<3)]
            let directory = try TemporaryDirectory()
            var trial = Trial()
            let context = "trial \(number) (\(moment), \(transport), \(count) × \(bodyBytes) B)"

            let first = try Child(server, directory: directory.url, count: count, transport: transport, bodyBytes: bodyBytes)
            let target = Int.random(in: 1...count)
            var answers = 0
            var armed = false
            for await line in first.lines {
                trial.read(line)
                switch moment {
                case .whileWriting where line.hasPrefix("accepted") && trial.accepted.count == target:
                    first.kill()
                case .afterAnswer where line == "answered":
                    answers += 1
                    if answers == target { first.kill() }
                case .atRandom where line.hasPrefix("accepted") && !armed:
                    armed = true
                    // The moment is random on purpose; the test waits on lines, not on this delay.
                    let delay = UInt64.random(in: 0...30_000_000)
                    Task.detached { [first] in
                        try? await Task.sleep(nanoseconds: delay)
                        first.kill()
                    }
                default: break
                }
            }
            await first.exited()
            if first.process.terminationReason == .uncaughtSignal { killsLanded += 1 }

            let second = try Child(server, directory: directory.url, count: 0, transport: transport, bodyBytes: 0)
            for await line in second.lines { trial.read(line) }
            await second.exited()
            #expect(second.process.terminationStatus == 0, "\(context): \(trial.lines)")
            #expect(trial.lines.last == "idle", "\(context): \(trial.lines)")

            for id in trial.accepted {
                let reports = trial.reports[id] ?? []
                #expect(reports.first?.status == "201", "\(context): \(id) reported \(reports)")
                // A second report only where the first process died while handing it over — and it says so.
                #expect(reports.dropFirst().allSatisfy { $0.redelivery }, "\(context): \(id) reported \(reports)")
            }
            let errors = trial.lines.filter { $0.hasPrefix("error") }
            #expect(errors.isEmpty, "\(context): \(trial.lines)")
            for subdirectory in ["items", "dead", "corrupt"] {
                #expect(directory.names(in: subdirectory).isEmpty, "\(context): \(subdirectory) \(directory.names(in: subdirectory))")
            }
        }
        // Every key reached the server with one body however often it was sent, and was applied once.
        let byKey = Dictionary(grouping: server.receivedRequests.filter { $0.path == "/apply" }) { $0.headers["Idempotency-Key"] ?? "" }
        #expect(byKey[""] == nil)
        for (key, requests) in byKey {
            #expect(Set(requests.map(\.body)).count == 1 && inbox.effects[key] == 1, "\(key): \(requests.count) requests")
        }
        // Some keys must have been sent again after a kill, or the server's deduplication was never needed.
        #expect(byKey.values.contains { $0.count > 1 })
        // Most first runs must really have been killed, or the trials showed nothing.
        #expect(killsLanded >= 50, "\(killsLanded) of 75 first runs were killed")
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// A retry or resume with `Range` keeps its bytes only for a 206 that continues them (issue 37,
/// item 15): anything else restarts the whole request or fails typed, never succeeds with other bytes.
@Suite("Range continuations: only a 206 that continues the kept bytes is appended", .timeLimit(.notAHang))
struct RangeContinuationTests {
    static let faults: [LocalHTTPServer.Fault] = [
        .rangeStartsElsewhere, .rangeWithoutContentRange, .rangeOtherTotal, .rangeOtherValidator,
        // Found by the independent attack: the same start, total and validator, one byte short
        // of the end, was appended and reported as the whole body.
        .rangeEndsShort,
    ]

    static var cases: [(HTTPClient.TransportKind, LocalHTTPServer.Fault)] {
        HTTPClient.TransportKind.testedKinds.flatMap { transport in faults.map { (transport, $0) } }
    }

    /// A client that retries once, quickly.
    private func client(_ server: LocalHTTPServer, _ transport: HTTPClient.TransportKind) -> HTTPClient {
        testClient(server, transport) { $0.retryPolicy = RetryPolicy(maximumAttempts: 2, baseDelay: 0.01, maximumDelay: 0.02) }
    }

    @Test(
        "A 206 that does not continue the body is not appended: the request starts over, and fails typed when cut again", arguments: cases)
    func notContinued(transport: HTTPClient.TransportKind, fault: LocalHTTPServer.Fault) async throws {
        try await withServer { server, _ in
            let client = client(server, transport)
            let path = "fault/\(fault.rawValue)"
            do {
                let data = try await client.get(path)
                Issue.record("succeeded with \(data.count) bytes; the body is \(LocalHTTPServer.rangeFaultBody.count)")
            } catch let error as ConveyorError {
                #expect(error.connectivityFailure == .connectionLost, "\(error)")
            }
            // The first attempt, the ranged retry, and the whole request sent again without Range.
            let ranges = server.receivedRequests.filter { $0.path == "/\(path)" }.map { $0.headers["Range"] }
            #expect(ranges == [nil, "bytes=600-", nil], "\(ranges)")
        }
    }

    @Test("A download resumed with a 206 that does not continue it fails typed and leaves no file", arguments: cases)
    func downloadNotContinued(transport: HTTPClient.TransportKind, fault: LocalHTTPServer.Fault) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-range-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server, _ in
            let client = client(server, transport)
            do {
                let file = try await client.download("fault/\(fault.rawValue)", to: .directory(directory))
                Issue.record("succeeded with \((try? Data(contentsOf: file))?.count ?? -1) bytes")
            } catch let error as ConveyorError {
                #expect(error.connectivityFailure == .connectionLost, "\(error)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }

    @Test(
        "A 206 starting elsewhere restarts the whole request, which then succeeds with exactly the body",
        arguments: HTTPClient.TransportKind.testedKinds)
    func restartSucceeds(transport: HTTPClient.TransportKind) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-range-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server, _ in
            let body = LocalHTTPServer.rangeFaultBody
            let calls = Lock(0)
            server.route("/restarts") { request in
                let call = calls.withLock {
                    $0 += 1
                    return $0
                }
                // 1: cut at 600; 2: the Range retry, answered from elsewhere; 3: the whole body.
                if call % 3 == 0 { return .init(headers: ["ETag": LocalHTTPServer.rangeFaultETag], body: .data(body)) }
                return .init(body: .fault(.rangeStartsElsewhere))
            }
            let client = client(server, transport)
            let data = try await client.get("restarts")
            #expect(data == body)
            let file = try await client.download("restarts", to: .directory(directory))
            #expect(try Data(contentsOf: file) == body)
            #expect(server.receivedRequests.map { $0.headers["Range"] } == [nil, "bytes=600-", nil, nil, "bytes=600-", nil])
        }
    }

    @Test(
        "A 206 that continues the body is appended: the retry asks for the rest and the bytes are whole",
        arguments: HTTPClient.TransportKind.testedKinds)
    func continued(transport: HTTPClient.TransportKind) async throws {
        try await withServer { server, _ in
            let body = LocalHTTPServer.rangeFaultBody
            server.route("/continues") { request in
                if request.headers["Range"] != nil { return .ranged(body, etag: LocalHTTPServer.rangeFaultETag, for: request) }
                return .init(body: .fault(.rangeStartsElsewhere))  // without Range: 600 of 1,200 bytes, then closed
            }
            let data = try await client(server, transport).get("continues")
            #expect(data == body)
            #expect(server.receivedRequests.map { $0.headers["Range"] } == [nil, "bytes=600-"])
        }
    }
}

import Conveyor
import ConveyorLocking
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A raw server that accepts `count` connections, reads one request head on each, and once all
/// have arrived resets every connection at once (`SO_LINGER` 0, then close: an RST).
final class ResetTogetherServer: Sendable {
    let port: Int
    private let listener: Int32
    private let count: Int

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }

    init(count: Int) throws {
        self.count = count
        (listener, port) = try listeningOnLoopback()
        Thread.detachNewThread { [self] in serve() }
    }

    func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

    private func serve() {
        defer { close(listener) }
        while true {
            var connections: [Int32] = []
            while connections.count < count {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else {
                    connections.forEach { close($0) }
                    return
                }
                var head = Data()
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !head.contains(Data("\r\n\r\n".utf8)) {
                    let read = recv(connection, &buffer, buffer.count, 0)
                    if read <= 0 { break }
                    head.append(contentsOf: buffer[0..<read])
                }
                connections.append(connection)
            }
            for connection in connections {
                var option = linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
                close(connection)
            }
        }
    }
}

/// A keep-alive server whose requests number `resetFrom` and `resetFrom + 1` (counted over all
/// connections) are reset together once both have arrived; every other request gets `200 ok`.
final class ResetPairServer: Sendable {
    let port: Int
    private let listener: Int32
    private let resetFrom: Int
    private let state = Lock<(count: Int, waiting: [Int32])>((0, []))
    private let released = DispatchSemaphore(value: 0)

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }

    init(resetFrom: Int) throws {
        self.resetFrom = resetFrom
        (listener, port) = try listeningOnLoopback()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

    private func acceptLoop() {
        defer { close(listener) }
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            Thread.detachNewThread { [self] in serve(connection) }
        }
    }

    private func serve(_ connection: Int32) {
        var pending = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            // One request: its head, then the body its Content-Length announces.
            var headEnd = pending.range(of: Data("\r\n\r\n".utf8))
            while headEnd == nil {
                let read = recv(connection, &buffer, buffer.count, 0)
                if read <= 0 {
                    close(connection)
                    return
                }
                pending.append(contentsOf: buffer[0..<read])
                headEnd = pending.range(of: Data("\r\n\r\n".utf8))
            }
            let head = String(decoding: pending[..<headEnd!.lowerBound], as: UTF8.self).lowercased()
            let length =
                head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            while pending.count < headEnd!.upperBound + length {
                let read = recv(connection, &buffer, buffer.count, 0)
                if read <= 0 {
                    close(connection)
                    return
                }
                pending.append(contentsOf: buffer[0..<read])
            }
            pending.removeSubrange(..<(headEnd!.upperBound + length))
            let (number, pair) = state.withLock { state -> (Int, [Int32]) in
                state.count += 1
                if state.count == resetFrom || state.count == resetFrom + 1 { state.waiting.append(connection) }
                return (state.count, state.waiting)
            }
            if number == resetFrom { return }  // the second of the pair resets both
            if number == resetFrom + 1 {
                for socket in pair {
                    var option = linger(l_onoff: 1, l_linger: 0)
                    setsockopt(socket, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
                    close(socket)
                }
                return
            }
            let answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
            _ = answer.withCString { send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
    }
}

@Suite("Connections reset together are failures at once")
struct ResetTogetherTests {
    /// Every transport and body kind but one. On corelibs URLSession, when libcurl sends a
    /// request again on a fresh connection because the reused one died ("Connection died,
    /// retrying a fresh connect", then `rewindbeforesend`), corelibs asks the delegate for a new
    /// body stream; without one it tells libcurl the rewind succeeded, and the headers go out
    /// with `Content-Length` while the body never does: the attempt ends at the idle timeout
    /// (issue #58 item 12; 3 of 3 runs for a `Data` body and for a file body before the router
    /// answered with a restarted stream). A `Data` body (`post`) cannot be given one — corelibs
    /// traps on a stream for a data body — so that case stays a corelibs limitation,
    /// documented in the TransportsAndTLS article.
    static var reusedCases: [(HTTPClient.TransportKind, String)] {
        HTTPClient.TransportKind.testedKinds.flatMap { transport in
            ["get", "post", "file"].compactMap { body in transport == .urlSession && body == "post" ? nil : (transport, body) }
        }
    }

    @Test(
        "Two requests whose connections are reset together both fail as resets well before the idle timeout",
        arguments: HTTPClient.TransportKind.testedKinds, ["get", "post", "file"])
    func resetTogether(transport: HTTPClient.TransportKind, body: String) async throws {
        let server = try ResetTogetherServer(count: 2)
        defer { server.stop() }
        let client = testClient(baseURL: server.baseURL, transport) { $0.idleTimeout = 120 }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-reset-\(UUID().uuidString)")
        try Data(repeating: 0x61, count: 2048).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let requests = try ["a", "b"].map { path in
            switch body {
            case "post": try client.request(method: .post, path: path, parameters: ["field": "value"])
            case "file": try client.request(method: .post, path: path, bodyFile: file)
            default: try client.request(method: .get, path: path)
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        let results = await withTaskGroup(of: (ConveyorError?, Duration).self) { group in
            for request in requests {
                group.addTask {
                    do {
                        _ = try await client.response(for: request, responseSerializer: .data)
                        return (nil, clock.now - start)
                    } catch {
                        return (error as? ConveyorError, clock.now - start)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for (error, elapsed) in results {
            #expect(error?.connectivityFailure != nil, "\(String(describing: error))")
            // The idle timeout is 120 s: a reset noticed only then took more than 60 s. A reset
            // seen at once takes milliseconds; 60 s holds on a machine many times slower (a
            // loaded two-core run took 18 s, its cooperative pool busy with other suites).
            #expect(elapsed < .seconds(60), "\(elapsed): \(String(describing: error))")
        }
    }

    @Test(
        "Two requests on reused connections reset together are retried at once, well before the idle timeout",
        arguments: reusedCases)
    func reusedResetTogether(transport: HTTPClient.TransportKind, body: String) async throws {
        let server = try ResetPairServer(resetFrom: 3)
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-reset-\(UUID().uuidString)")
        try Data(repeating: 0x61, count: 2048).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let client = testClient(baseURL: server.baseURL, transport) {
            $0.idleTimeout = 120
            $0.retryPolicy = RetryPolicy(maximumAttempts: 3, baseDelay: 0.01, maximumDelay: 0.02)
        }
        func pair() async throws -> [Duration] {
            let requests = try ["a", "b"].map { path in
                switch body {
                case "post": try client.request(method: .post, path: path, parameters: ["field": "value"])
                case "file": try client.request(method: .post, path: path, bodyFile: file)
                default: try client.request(method: .get, path: path)
                }
            }
            let clock = ContinuousClock()
            let start = clock.now
            return await withTaskGroup(of: Duration.self) { group in
                for request in requests {
                    group.addTask {
                        // A POST is not retried: it may fail, as a reset, but at once.
                        do {
                            _ = try await client.response(for: request, responseSerializer: .data)
                        } catch {
                            #expect((error as? ConveyorError)?.connectivityFailure != nil && body != "get", "\(error)")
                        }
                        return clock.now - start
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        _ = try await pair()  // two kept-alive connections
        // As above: a reset seen at once takes milliseconds, one seen at the idle timeout 120 s.
        for elapsed in try await pair() {
            #expect(elapsed < .seconds(60), "\(elapsed)")
        }
    }
}

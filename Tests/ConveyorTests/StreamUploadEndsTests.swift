import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension PumpThreadSuites {
    /// Stream uploads always end — the independent attack on the body pump found a challenge that
    /// hung through the pump, and (with a request built by hand, whose 60 s default it kept) an idle
    /// timeout that seemed not to fire; these pin both on the curl transport, URLSession, and
    /// URLSession through the pump.
    @Suite("Stream uploads end: challenges and stalled servers")
    struct StreamUploadEndsTests {
        @Test(
            "A Basic challenge for a multipart body from disk: sent again whole, or (the pump on Linux, which corelibs never asks for a new body) refused at once",
            arguments: BodyStreamReuseTests.Route.allCases)
        func challengedMultipart(route: BodyStreamReuseTests.Route) async throws {
            let server = try LocalHTTPServer.started()
            defer { server.stop() }
            let expected = BodyStreamReuseTests.routeBasicChallenge(on: server)
            let client = BodyStreamReuseTests.client(server, route) { $0.multipartMemoryThreshold = 0 }
            let part = BodyStreamReuseTests.body(512 * 1024)
            let request = try client.multipartRequest(path: "auth") { form in
                form.append(data: part, name: "f", fileName: "f.bin", mimeType: "application/octet-stream")
            }
            let length = try #require(request.value(forHTTPHeaderField: "Content-Length").flatMap(Int.init))
            // Bounded: the hang this guards against never completed.
            let outcome = try await withThrowingTaskGroup(of: Result<Data, any Error>?.self) { group in
                group.addTask {
                    do {
                        let response = try await client.response(for: request, responseSerializer: DataResponseSerializer()) {
                            $0.credential = URLCredential(user: "u", password: "p", persistence: .none)
                        }
                        return .success(response.data)
                    } catch {
                        return .failure(error)
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(30))
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            switch outcome {
            case .success(let data)?:
                #expect(route != .pumped)
                #expect(data == Data("\(length)".utf8))
            case .failure(let error)?:
                #expect(route == .pumped && BodyStreamReuseTests.isExhausted(error), "\(error)")
            case nil:
                Issue.record("no completion in 30 s")
            }
            let authorized = server.receivedRequests.filter { $0.path == "/auth" && $0.headers["Authorization"] == expected }
            #expect(authorized.allSatisfy { $0.body.count == length })
        }

        @Test(
            "A server that stops reading the body: the client's idle timeout (2 s) ends the upload",
            arguments: BodyStreamReuseTests.Route.allCases)
        func stalledReader(route: BodyStreamReuseTests.Route) async throws {
            let server = try RecordingSocketServer(holdsBody: true)
            defer { server.stop() }
            let client = testClient(baseURL: server.baseURL, route == .curl ? .curl : .urlSession) {
                $0.pumpsBodyStreams = route == .pumped
                $0.idleTimeout = 2
            }
            // Built by the client, which stamps its idle timeout on the request (a URLRequest made
            // by hand keeps URLRequest's own 60 s).
            var request = try client.request(method: .post, path: "upload")
            // Far more than the socket buffers hold (made at once: a computed 64 MiB costs seconds in a debug build).
            request.httpBodyStream = InputStream(data: Data(repeating: 0x5A, count: 64 * 1024 * 1024))
            let started = ContinuousClock.now
            do {
                _ = try await client.response(for: request, responseSerializer: DataResponseSerializer())
                Issue.record("succeeded against a server that never read the body")
            } catch ConveyorError.timedOut(let kind, _) {
                #expect(kind == .idle)
            }
            // The 2 s plus the time to fill the socket buffers, well short of URLRequest's 60 s.
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }
}

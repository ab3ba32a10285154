import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// The Errors article's promise, against a real server: what the async API throws is a
/// `ConveyorError`, and the article's `switch` tells the failures apart.
@Suite("Errors: everything the async API throws is a ConveyorError")
struct ErrorsTests {
    struct User: Decodable, Sendable { let id: Int }

    /// The article's `switch`, returning which branch a failure took.
    static func classify(_ body: () async throws -> Void) async -> String {
        do {
            try await body()
            return "success"
        } catch let error as ConveyorError {
            switch error {
            case .unacceptableStatusCode(404, _, _): return "404"
            case .unacceptableStatusCode(let code, _, _): return "status \(code)"
            case .timedOut: return "timed out"
            case .network(let urlError) where urlError.code == .cannotConnectToHost: return "down"
            case .cancelled: return "cancelled"
            case .responseSerializationFailed: return "undecodable"
            default: return "other: \(error)"
            }
        } catch {
            return "not a ConveyorError: \(error)"
        }
    }

    @Test(
        "A 404, a body that does not decode, a refused port, a timeout and a cancelled Task",
        arguments: HTTPClient.TransportKind.testedKinds)
    func articleSwitch(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let held = HeldRoute(server)
        let client = testClient(server, transport)
        // A short idle limit only where the timeout is the point: on a loaded machine a whole
        // suite's stall can outlast 0.3 s, and a 503 must not be classified as a timeout then.
        let impatient = testClient(server, transport) { $0.idleTimeout = 0.3 }
        #expect(await Self.classify { _ = try await client.get("status/404") } == "404")
        #expect(await Self.classify { _ = try await client.get("status/503") } == "status 503")
        #expect(await Self.classify { _ = try await client.get("get", as: User.self) } == "undecodable")
        #expect(await Self.classify { _ = try await impatient.get("fault/stall-after-headers") } == "timed out")
        let refused = try RefusedPort()
        #expect(await Self.classify { _ = try await client.get("http://127.0.0.1:\(refused.port)/x") } == "down")
        let task = Task { await Self.classify { _ = try await client.get("hold") } }
        await held.arrived()
        task.cancel()
        #expect(await task.value == "cancelled")
    }
}

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Adapters run concurrently, and corelibs' `URLRequest.setValue(_:forHTTPHeaderField:)` is not
/// thread-safe (its `String.capitalized` crashed concurrent request building): the Authentication
/// article's adapter sample used it (issue 58, item 15). `URLRequest.setHeader(_:for:)` is the
/// public setter the samples use now.
@Suite("URLRequest.setHeader(_:for:) in adapters")
struct AdapterHeaderSetterTests {
    @Test(
        "200 concurrent requests through an adapter that sets, replaces and removes headers",
        arguments: HTTPClient.TransportKind.testedKinds)
    func concurrentAdapters(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport) { configuration in
            configuration.requestAdapters = [
                ClosureRequestAdapter { request, context in
                    var request = request
                    request.setHeader(UUID().uuidString, for: "X-Request-ID")
                    // Replaces the caller's spelling of the name, whatever its case.
                    request.setHeader("adapted", for: "x-stage")
                    request.setHeader(nil, for: "X-Remove-Me")
                    if context.isCredentialOrigin { request.setHeader("signed", for: "X-Signature") }
                    return request
                }
            ]
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    _ = try await client.response(method: .get, path: "headers", headers: ["X-Stage": "built", "X-Remove-Me": "1"])
                }
            }
            try await group.waitForAll()
        }
        let received = server.receivedRequests.filter { $0.path == "/headers" }
        #expect(received.count == 200)
        #expect(Set(received.compactMap { $0.headers["X-Request-ID"] }).count == 200)
        #expect(received.allSatisfy { $0.headers["X-Stage"] == "adapted" && $0.headers["X-Remove-Me"] == nil })
        #expect(received.allSatisfy { $0.headers["X-Signature"] == "signed" })
    }
}

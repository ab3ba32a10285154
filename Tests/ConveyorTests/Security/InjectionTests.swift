import Conveyor
import ConveyorTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a careless caller can put into a request must never reach the wire unchecked.
@Suite("Injection: methods, headers and credentials are checked before anything is sent")
struct InjectionTests {
    private static func client(_ server: LocalHTTPServer, _ transport: HTTPClient.TransportKind) -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.monitorsReachability = false
        return HTTPClient(baseURL: server.baseURL, configuration: configuration)
    }

    @Test(
        "A method that is not an RFC 9110 token is refused with invalidMethod; nothing reaches the server",
        arguments: HTTPClient.TransportKind.testedKinds)
    func methodInjection(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = Self.client(server, transport)
        let hostile = [
            "GET /admin HTTP/1.1\r\nX-Injected: 1\r\nX-Pad:", "GET\r\n\r\nPOST /smuggled HTTP/1.1", "GET /x", "", "G\u{0}ET", "GÉT",
        ]
        for method in hostile {
            await #expect {
                _ = try await client.response(method: HTTPMethod(rawValue: method), path: "get")
            } throws: { error in
                guard case .invalidMethod = error as? ConveyorError else { return false }
                return true
            }
            // A request built by hand, with the method set on it, is checked the same way
            // (Foundation reads an empty method as GET there).
            guard !method.isEmpty else { continue }
            var request = URLRequest(url: server.baseURL.appendingPathComponent("get"))
            request.httpMethod = method
            let probe = CompletionProbe()
            let operation = HTTPRequestOperation(request: request)
            probe.attach(to: operation)
            client.enqueue(operation)
            let error = await probe.outcome().error
            guard case .invalidMethod? = error else {
                Issue.record("\(method.debugDescription) was not refused: \(String(describing: error))")
                continue
            }
        }
        #expect(server.receivedRequests.isEmpty, "\(server.receivedRequests)")
        // Extension methods that are tokens still go through.
        _ = try await client.response(method: HTTPMethod(rawValue: "PROPFIND"), path: "anything")
        #expect(server.receivedRequests.last?.method == "PROPFIND")
    }
}

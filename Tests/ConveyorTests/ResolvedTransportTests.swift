import Conveyor
import ConveyorTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A client says which transport it ended up with (issue 58, item 16): `.automatic` and the
/// `CONVEYOR_TRANSPORT` variable decide at creation, and nothing told the caller what they chose.
@Suite("HTTPClient.resolvedTransport")
struct ResolvedTransportTests {
    /// What `.automatic` means in this process (the suites run under both values of the variable).
    static var expectedAutomatic: HTTPClient.TransportKind {
        switch ProcessInfo.processInfo.environment["CONVEYOR_TRANSPORT"]?.lowercased() {
        case "urlsession": return .urlSession
        case "curl": return .curl
        default:
            #if os(Linux)
                return .curl
            #else
                return .urlSession
            #endif
        }
    }

    @Test("An explicit kind is what the client uses; .automatic resolves as documented, never to .automatic")
    func explicitAndAutomatic() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        for kind in HTTPClient.TransportKind.testedKinds {
            let client = testClient(server, kind)
            #expect(client.resolvedTransport == kind)
            _ = try await client.get("get")  // it works over a socket, whichever it is
        }
        let automatic = testClient(server, .automatic)
        #expect(automatic.resolvedTransport == Self.expectedAutomatic)
        #expect(automatic.resolvedTransport != .automatic)
        _ = try await automatic.get("get")
    }

    @Test("A session configuration with its own URLProtocol classes makes .automatic choose URLSession")
    func ownProtocolsChooseURLSession() {
        let client = testClient(baseURL: URL(string: "http://127.0.0.1:9/")!, .automatic) { configuration in
            let session = URLSessionConfiguration.ephemeral
            session.protocolClasses = [StubURLProtocol.self]
            configuration.sessionConfiguration = session
        }
        let expected: HTTPClient.TransportKind =
            ProcessInfo.processInfo.environment["CONVEYOR_TRANSPORT"]?.lowercased() == "curl" ? .curl : .urlSession
        #expect(client.resolvedTransport == expected)
    }
}

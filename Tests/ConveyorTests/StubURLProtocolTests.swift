import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// StubURLProtocol is global state: these tests run one at a time.
@Suite("StubURLProtocol: cases a socket cannot show", .serialized)
struct StubURLProtocolTests {
    let base = URL(string: "https://stubbed.conveyor.invalid/")!

    func client() -> HTTPClient {
        var configuration = HTTPClient.Configuration.default
        configuration.sessionConfiguration = StubURLProtocol.sessionConfiguration()
        configuration.monitorsReachability = false
        configuration.cache = nil
        return HTTPClient(baseURL: base, configuration: configuration)
    }

    @Test("A stubbed response reaches the caller through the whole operation pipeline")
    func response() async throws {
        defer { StubURLProtocol.removeAllStubs() }
        StubURLProtocol.stub(
            url: base.appendingPathComponent("user"),
            with: .response(status: 200, headers: ["Content-Type": "application/json"], body: Data(#"{"name":"Ada"}"#.utf8)))
        struct User: Decodable { let name: String }
        let user = try await client().get("user", as: User.self)
        #expect(user.name == "Ada" && StubURLProtocol.servedRequests.count == 1)
    }

    @Test("A stubbed notConnectedToInternet arrives as a typed network error")
    func offline() async throws {
        defer { StubURLProtocol.removeAllStubs() }
        StubURLProtocol.stub(matching: { _ in true }, with: .failure(URLError(.notConnectedToInternet)))
        await #expect {
            try await client().get("anything")
        } throws: { error in
            if case .network(let urlError) = error as? ConveyorError { urlError.code == .notConnectedToInternet } else { false }
        }
    }
}

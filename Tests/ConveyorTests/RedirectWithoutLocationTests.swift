import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// A 3xx that names no `Location` (issue #58, items 6 and 7): a policy that follows redirects
/// fails with a readable error; a policy that follows none gets the 3xx itself, head included,
/// on both transports.
@Suite("A redirect without Location")
struct RedirectWithoutLocationTests {
    /// The redirect statuses corelibs treats as redirects (its 305/306 too), and the two it does not.
    static let statuses = [300, 301, 302, 303, 304, 305, 306, 307, 308]

    @Test("The error of a redirect without Location is one sentence that says the header is missing")
    func missingLocationDescription() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/nowhere") { _ in .init(status: 301) }
        server.route("/ftp") { _ in .init(status: 302, headers: ["Location": "ftp://example.com/file"]) }
        let client = testClient(server, .curl)
        await #expect {
            try await client.get("nowhere")
        } throws: { error in
            guard case .redirectFailed(.invalidLocation(nil, _)) = error as? ConveyorError else { return false }
            return "\(error)".contains("the 301 redirect has no Location header") && !"\(error)".contains("is not an http(s) URL")
        }
        await #expect {
            try await client.get("ftp")
        } throws: { error in
            "\(error)".contains("the 302 redirect's Location \"ftp://example.com/file\" is not an http(s) URL")
        }
    }

    @Test(
        "With RedirectPolicy.none a 3xx without Location is the response on both transports, head included",
        arguments: HTTPClient.TransportKind.testedKinds, statuses)
    func notFollowedWithoutLocation(transport: HTTPClient.TransportKind, status: Int) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        // A 304 has no body by definition; the others carry one.
        let body = status == 304 ? Data() : Data("moved".utf8)
        server.route("/moved") { _ in .init(status: status, headers: ["X-Probe": "here"], body: .data(body)) }
        let client = testClient(server, transport) { $0.redirectPolicy = .none }
        // The default acceptable codes refuse the 3xx: the error carries it.
        await #expect {
            try await client.get("moved")
        } throws: { error in
            guard case .unacceptableStatusCode(let code, let response, _) = error as? ConveyorError else { return false }
            return code == status && response.value(forHTTPHeaderField: "X-Probe") == "here"
        }
        // An operation that accepts 3xx gets it as a success, with its head.
        let operation = client.operation(with: try client.request(method: .get, path: "moved"), success: nil, failure: nil)
        operation.acceptableStatusCodes = IndexSet(300..<400)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let outcome = await probe.outcome()
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        #expect(operation.responseHead?.statusCode == status)
        #expect(operation.responseHead?.value(forHTTPHeaderField: "X-Probe") == "here")
        // corelibs keeps the body of a 301-303 or 305-308 it did not treat as a redirect to
        // itself: URLSession delivers the head alone (documented in the Redirects article).
        let bodyWithheld = transport == .urlSession && [301, 302, 303, 305, 306, 307, 308].contains(status)
        #expect(outcome.data ?? Data() == (bodyWithheld ? Data() : body))
    }
}

import Conveyor
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// One set of credential header names (issue 58, item 18): `X-API-Key` was masked in logs (the
/// redaction's list) but followed a redirect to another origin (the redirect policy's list).
/// Redirects, masking by name and masking by value now read the same set.
@Suite("Credential header names: one set for redirects, redaction and masking by value")
struct CredentialHeaderNamesTests {
    @Test(
        "A redirect to another origin strips X-API-Key and X-Auth-Token, default or per-request; the same origin keeps them",
        arguments: HTTPClient.TransportKind.testedKinds)
    func apiKeyStaysWithItsOrigin(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let other = try LocalHTTPServer.started()
        defer { other.stop() }
        let client = testClient(server, transport)
        client.setDefaultHeader("X-API-Key", value: "default-api-key-1")
        let target = other.baseURL.appendingPathComponent("headers").absoluteString
        _ = try await client.get("redirect-to", parameters: ["url": target])
        let first = try #require(other.receivedRequests.last?.headers)
        #expect(first["X-API-Key"] == nil, "the default key followed the redirect: \(first)")

        let request = try client.request(
            method: .get, path: "redirect-to", parameters: ["url": target],
            headers: ["X-API-Key": "per-request-key-2", "X-Auth-Token": "per-request-token-3"])
        let operation = client.operation(with: request, success: nil, failure: nil)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
        let second = try #require(other.receivedRequests.last?.headers)
        #expect(second["X-API-Key"] == nil && second["X-Auth-Token"] == nil, "\(second)")
        #expect(other.receivedRequests.count == 2)

        // On the same origin the key stays.
        _ = try await client.get("redirect-to", parameters: ["url": "/headers"])
        #expect(server.receivedRequests.last?.headers["X-API-Key"] == "default-api-key-1")
    }

    @Test("The redirect policy, the redaction and masking by value use the one documented set")
    func oneSet() {
        let names = HTTPHeaders.credentialNames
        #expect(names == ["Authorization", "Proxy-Authorization", "Cookie", "X-API-Key", "X-Auth-Token"])
        #expect(RedirectPolicy.defaultHeadersRemovedAcrossOrigins == names)
        #expect(RedirectPolicy.default.headersRemovedAcrossOrigins == names)
        let redacted = Redaction().headerNames
        #expect(names.allSatisfy { redacted.contains($0.lowercased()) } && redacted.contains("set-cookie"))
        for name in names {
            let value = "value-of-\(name)-\(UUID().uuidString.prefix(8))"
            #expect(SentSecrets.values(ofHeaders: [(key: name, value: value)]).contains(value), "\(name)")
        }
    }
}

import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// Item 4 and 5 of issue 38, one rule each in one place: settings adopted once per operation,
/// the response of a finished operation built in one function, transport errors decided by
/// the transport.
@Suite("One place each: settings adoption, finished responses, transport errors")
struct RequestBuilderTests {
    @Test("Settings are adopted once per operation: async verbs, operation(with:) + enqueue, a direct operation, another client's")
    func settingsAdoptedOnce() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, .curl)
        func adoptions(_ operation: HTTPRequestOperation) -> Int { Int(operation.mutableState.withLock { $0.settingsAdoptions }) }

        // The async path: built by the client, then enqueued on it.
        let captured = Lock<HTTPRequestOperation?>(nil)
        let request = try client.request(method: .get, path: "get")
        let response = try await client.response(for: request, responseSerializer: DataResponseSerializer()) { operation in
            captured.withLock { $0 = operation }
        }
        #expect(response.statusCode == 200)
        let asyncOperation = try #require(captured.withLock { $0 })
        #expect(adoptions(asyncOperation) == 1)

        // operation(with:) then enqueue, and an operation built directly then enqueued.
        let probe = CompletionProbe()
        let built = client.operation(with: request, success: probe.success, failure: probe.failure)
        built.callbackQueue = probe.queue
        client.enqueue(built)
        _ = await probe.outcome()
        #expect(adoptions(built) == 1)
        let direct = HTTPRequestOperation(request: request)
        let directProbe = CompletionProbe()
        directProbe.attach(to: direct)
        client.enqueue(direct)
        _ = await directProbe.outcome()
        #expect(adoptions(direct) == 1)

        // Built by one client and enqueued on another: it runs with the second one's settings.
        let other = testClient(server, .curl)
        let moved = client.operation(with: request, success: nil, failure: nil)
        let movedProbe = CompletionProbe()
        movedProbe.attach(to: moved)
        other.enqueue(moved)
        _ = await movedProbe.outcome()
        #expect(adoptions(moved) == 2)
        #expect(moved.mutableState.withLock { $0.adoptedClient } === other)
    }

    @Test("A finished operation's response: built once, from the operation; a success without a head is a typed error")
    func finishedResponse() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, .curl)
        let probe = CompletionProbe()
        let operation = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
        operation.responseSerializer = DataResponseSerializer()
        probe.attach(to: operation)
        client.enqueue(operation)
        _ = await probe.outcome()
        guard case .success(let response) = HTTPResponse<Data>.finished(operation, value: operation.responseData) else {
            Issue.record("a finished operation gave no response")
            return
        }
        #expect(response.statusCode == 200 && response.data == operation.responseData && response.value == response.data)
        #expect(response.request.url == operation.currentRequest.url)
        // No value from the serializer is a serialization failure, not a trap.
        guard case .failure(.responseSerializationFailed(_, let head?, _)) = HTTPResponse<Int>.finished(operation, value: nil) else {
            Issue.record("a missing value was not a serialization failure")
            return
        }
        #expect(head.statusCode == 200)
        // An operation that never ran has no head and no metrics: a typed error, not a crash.
        let idle = HTTPRequestOperation(request: URLRequest(url: server.baseURL))
        guard case .failure(.network(let error)) = HTTPResponse<Data>.finished(idle, value: Data()) else {
            Issue.record("a response without a head was not a typed error")
            return
        }
        #expect(error.code == .badServerResponse)
    }

    @Test("corelibs' texts are read by the URLSession transport: a certificate failure reaches the operation as serverTrustFailed")
    func urlSessionDecidesTrustFailures() throws {
        let url = URL(string: "https://api.example.com/x")
        func decided(_ code: URLError.Code, _ text: String) -> any Error {
            URLSessionErrors.decided(URLError(code, userInfo: [NSLocalizedDescriptionKey: text]), url: url)
        }
        guard
            case .serverTrustFailed(let host, let reason) = decided(.unknown, "SSL certificate problem: self-signed certificate")
                as? ConveyorError
        else {
            Issue.record("a certificate text was not decided as serverTrustFailed")
            return
        }
        #expect(host == "api.example.com" && reason.contains("self-signed"))
        #expect(decided(.serverCertificateHasBadDate, "expired") as? ConveyorError != nil)
        // Other texts keep their (normalized) URLError: the operation wraps it as `.network`.
        #expect((decided(.unknown, "Failed to connect to api.example.com port 443") as? URLError)?.code == .cannotConnectToHost)
        #expect((decided(.secureConnectionFailed, "wrong version number") as? URLError)?.code == .secureConnectionFailed)
        #expect((decided(.timedOut, "Operation timed out") as? URLError)?.code == .timedOut)
    }
}

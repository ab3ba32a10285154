import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// Handles requests whose Accept header asks for `application/x-test`.
final class TestFormatOperation: HTTPRequestOperation, @unchecked Sendable {
    override class func canProcess(_ request: URLRequest) -> Bool {
        request.value(forHTTPHeaderField: "Accept")?.contains("application/x-test") == true
    }
}

/// Handles every request.
final class CatchAllOperation: HTTPRequestOperation, @unchecked Sendable {
    override class func canProcess(_ request: URLRequest) -> Bool { true }
}

@Suite("Operation classes are chosen by registration and canProcess")
struct OperationRegistrationTests {
    let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!)

    @Test("Without registration the base class is used")
    func baseClass() throws {
        let operation = client.operation(with: try client.request(method: .get, path: "x"), success: nil, failure: nil)
        #expect(type(of: operation) == HTTPRequestOperation.self)
    }

    @Test("A registered class is used only for requests it can process")
    func canProcess() throws {
        client.register(TestFormatOperation.self)
        client.setDefaultHeader("Accept", value: "application/x-test")
        #expect(
            type(of: client.operation(with: try client.request(method: .get, path: "x"), success: nil, failure: nil))
                == TestFormatOperation.self)
        client.setDefaultHeader("Accept", value: "text/plain")
        #expect(
            type(of: client.operation(with: try client.request(method: .get, path: "x"), success: nil, failure: nil))
                == HTTPRequestOperation.self)
    }

    @Test("Newest registration wins; re-registering moves a class to the front; unregister removes it")
    func order() throws {
        client.setDefaultHeader("Accept", value: "application/x-test")
        client.register(TestFormatOperation.self)
        client.register(CatchAllOperation.self)
        #expect(
            type(of: client.operation(with: try client.request(method: .get, path: "x"), success: nil, failure: nil))
                == CatchAllOperation.self)
        client.register(TestFormatOperation.self)
        #expect(
            client.registeredOperationClasses.map { ObjectIdentifier($0) } == [
                ObjectIdentifier(TestFormatOperation.self), ObjectIdentifier(CatchAllOperation.self),
            ])
        client.unregister(TestFormatOperation.self)
        client.unregister(CatchAllOperation.self)
        #expect(client.registeredOperationClasses.isEmpty)
    }

    @Test("cancelAllOperations matches method and path, ignoring the query")
    func cancelAllMatching() async throws {
        try await withServer { server, client in
            client.operationQueue.isSuspended = true
            let probes = (0..<3).map { _ in CompletionProbe() }
            let search1 = client.get("search", parameters: ["q": "a"], success: probes[0].success, failure: probes[0].failure)
            let search2 = client.get("search", parameters: ["q": "b"], success: probes[1].success, failure: probes[1].failure)
            let other = client.post("search", success: probes[2].success, failure: probes[2].failure)
            client.cancelAllOperations(method: .get, path: "search")
            #expect(search1.isCancelled && search2.isCancelled && !other.isCancelled)
            client.operationQueue.isSuspended = false
            #expect(await probes[0].outcome().error?.isCancelled == true)
            #expect(await probes[1].outcome().error?.isCancelled == true)
            #expect(await probes[2].outcome().error?.statusCode == 404)
            #expect(server.receivedRequests.map(\.method) == ["POST"])
        }
    }

    @Test("cancelAllOperations without a path cancels every operation, or every one of a method")
    func cancelAllWithoutPath() async throws {
        try await withServer { server, client in
            client.operationQueue.isSuspended = true
            let probes = (0..<4).map { _ in CompletionProbe() }
            let get1 = client.get("get", success: probes[0].success, failure: probes[0].failure)
            let get2 = client.get("headers", success: probes[1].success, failure: probes[1].failure)
            let post = client.post("post", success: probes[2].success, failure: probes[2].failure)
            client.cancelAllOperations(method: .get)
            #expect(get1.isCancelled && get2.isCancelled && !post.isCancelled)
            let put = client.put("put", success: probes[3].success, failure: probes[3].failure)
            client.cancelAllOperations()
            #expect(post.isCancelled && put.isCancelled)
            client.operationQueue.isSuspended = false
            for probe in probes { #expect(await probe.outcome().error?.isCancelled == true) }
            #expect(server.receivedRequests.isEmpty)
        }
    }
}

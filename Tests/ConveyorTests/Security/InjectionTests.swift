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
    @Test(
        "A method that is not an RFC 9110 token is refused with invalidMethod; nothing reaches the server",
        arguments: HTTPClient.TransportKind.testedKinds)
    func methodInjection(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
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

    @Test(
        "A credential whose user name or password holds CR, LF or NUL, or a Basic user name with a colon, is never sent",
        arguments: HTTPClient.TransportKind.testedKinds)
    func credentialInjection(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        for (user, password) in [("ada\r\nX-Injected: 1", "pw"), ("ada", "pw\r\nX-Injected: 1"), ("ada\u{0}", "pw"), ("a:da", "pw")] {
            client.defaultCredential = URLCredential(user: user, password: password, persistence: .none)
            await #expect {
                _ = try await client.response(method: .get, path: "basic-auth/ada/pw")
            } throws: { error in
                guard case .authenticationFailed(let response, _)? = error as? ConveyorError else { return false }
                return response?.statusCode == 401
            }
        }
        #expect(server.receivedRequests.allSatisfy { $0.headers["Authorization"] == nil && $0.headers["X-Injected"] == nil })
        // A plain credential still answers.
        client.defaultCredential = URLCredential(user: "ada", password: "pw", persistence: .none)
        #expect(try await client.response(method: .get, path: "basic-auth/ada/pw").statusCode == 200)
    }

    @Test(
        "A credential answers challenges of its own origin only: after a redirect to another port it is not sent",
        arguments: HTTPClient.TransportKind.testedKinds)
    func credentialStaysWithItsOrigin(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let other = try LocalHTTPServer.started()
        defer { other.stop() }
        let client = testClient(server, transport)
        client.defaultCredential = URLCredential(user: "ada", password: "pw", persistence: .none)
        let target = other.baseURL.appendingPathComponent("basic-auth/ada/pw").absoluteString
        await #expect {
            _ = try await client.response(method: .get, path: "redirect-to", parameters: ["url": target])
        } throws: { error in
            guard case .authenticationFailed(let response, _)? = error as? ConveyorError else { return false }
            return response?.statusCode == 401 && response?.url?.port == other.port
        }
        #expect(other.receivedRequests.count == 1 && other.receivedRequests.allSatisfy { $0.headers["Authorization"] == nil })
        // On its own origin the same credential answers.
        #expect(try await client.response(method: .get, path: "basic-auth/ada/pw").statusCode == 200)
    }

    @Test("Enqueueing an operation twice, on one client or two, stops with a message naming it, not a Foundation trap")
    func enqueuedTwice() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!)
            let second = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!)
            first.operationQueue.isSuspended = true
            let operation = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/twice?token=s3cr3t")!))
            first.enqueue(operation)
            second.enqueue(operation)
        }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!)
            client.operationQueue.isSuspended = true
            let operation = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:9/twice?token=s3cr3t")!))
            client.enqueue(operation)
            client.enqueue(operation)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("HTTPClient.enqueue: the operation GET http://127.0.0.1:9/twice"), "\(message)")
        #expect(!message.contains("s3cr3t"), "\(message)")
    }

    @Test(
        "The session's additional headers and stored cookies pass the same check as the request's own",
        arguments: HTTPClient.TransportKind.testedKinds)
    func headersFromOtherSources(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        func client(additional: [String: String], cookie: (name: String, value: String)?) -> HTTPClient {
            var configuration = HTTPClient.Configuration.default
            configuration.transport = transport
            configuration.cache = nil
            configuration.monitorsReachability = false
            let session = URLSessionConfiguration.default
            session.httpAdditionalHeaders = additional
            let storage = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "conveyor-tests-\(UUID().uuidString)")
            if let cookie,
                let made = HTTPCookie(properties: [
                    .name: cookie.name, .value: cookie.value, .domain: "127.0.0.1", .path: "/", .originURL: server.baseURL,
                ])
            {
                storage.setCookie(made)
            }
            session.httpCookieStorage = storage
            configuration.sessionConfiguration = session
            return HTTPClient(baseURL: server.baseURL, configuration: configuration)
        }
        func expectRefused(_ client: HTTPClient, naming name: String) async {
            await #expect {
                _ = try await client.get("headers")
            } throws: { error in
                guard case .invalidHeader(let refused)? = error as? ConveyorError else { return false }
                return refused == name
            }
        }
        await expectRefused(client(additional: ["X-Extra": "a\r\nX-Injected: 1"], cookie: nil), naming: "X-Extra")
        await expectRefused(client(additional: [:], cookie: ("session", "a\r\nX-Injected: 1")), naming: "Cookie")
        #expect(server.receivedRequests.isEmpty, "\(server.receivedRequests)")

        // Valid ones still go out, and a request's own header wins over the session's.
        let fine = client(additional: ["X-Extra": "session", "X-Both": "session"], cookie: ("session", "abc"))
        _ = try await fine.get("headers", headers: ["X-Both": "request"])
        let sent = try #require(server.receivedRequests.last?.headers)
        #expect(sent["X-Extra"] == "session" && sent["X-Both"] == "request" && sent["Cookie"] == "session=abc", "\(sent)")
    }
}

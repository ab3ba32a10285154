import Conveyor
import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

@Suite("Security: TLS validation, redaction, header injection")
struct SecurityTests {
    @Test("Error descriptions never contain the Authorization value, even when the body echoes it")
    func errorsRedactCredentials() async throws {
        try await withServer { server, client in
            server.route("/echo-denied") { request in
                .json(["headers": ["Authorization": request.headers["Authorization"] ?? ""], "token": "tok-123"], status: 403)
            }
            client.setAuthorizationHeader(token: "s3cr3t-bearer")
            do {
                _ = try await client.get("echo-denied", parameters: ["access_token": "q-s3cr3t"])
                Issue.record("a 403 succeeded")
            } catch let error as ConveyorError {
                let text = "\(error) \(error.localizedDescription)"
                #expect(error.statusCode == 403)
                #expect(!text.contains("s3cr3t-bearer") && !text.contains("q-s3cr3t") && !text.contains("tok-123"), "\(text)")
            }
        }
    }

    @Test("A URL with user:password has the password redacted in error descriptions")
    func errorsRedactURLPasswords() async throws {
        try await withServer { server, _ in
            var components = URLComponents(url: server.baseURL.appendingPathComponent("status/500"), resolvingAgainstBaseURL: false)!
            components.user = "ada"
            components.password = "pa55word"
            let client = HTTPClient(baseURL: server.baseURL)
            let operation = client.operation(with: URLRequest(url: components.url!), success: nil, failure: nil)
            let probe = CompletionProbe()
            probe.attach(to: operation)
            client.enqueue(operation)
            let error = try #require(await probe.outcome().error)
            #expect(!"\(error)".contains("pa55word"), "\(error)")
        }
    }

    @Test("Default headers with CR/LF are refused at send time; the server never sees an injected header")
    func headerInjection() async throws {
        try await withServer { server, client in
            client.setDefaultHeader("X-Trace", value: "1\r\nX-Admin: true")
            await #expect {
                try await client.get("headers")
            } throws: { error in
                if case .invalidHeader("X-Trace") = error as? ConveyorError { true } else { false }
            }
            #expect(server.receivedRequests.allSatisfy { $0.headers["X-Admin"] == nil })
            #expect(server.receivedRequests.isEmpty)
        }
    }

    @Test("Multipart names and file names with quotes and CR/LF are escaped, not injected")
    func multipartEscaping() async throws {
        try await withServer { server, client in
            let request = try client.multipartRequest(path: "post") { form in
                form.append(data: Data("x".utf8), name: "a\"\r\nContent-Type: evil", fileName: "f\"\r\n.txt", mimeType: "text/plain")
            }
            server.route("/post") { request in
                let parts = (try? request.multipartParts()) ?? []
                return .json([
                    "parts": parts.count, "headers": parts.first.map { $0.headers.count } ?? -1,
                    "name": parts.first?.name ?? "", "file": parts.first?.fileName ?? "",
                ])
            }
            let echo = try await client.response(for: request, responseSerializer: DataResponseSerializer()).data.jsonObject
            #expect(echo["parts"] as? Int == 1 && echo["headers"] as? Int == 2)
            #expect(echo["name"] as? String == "a%22%0D%0AContent-Type: evil")
            #expect(echo["file"] as? String == "f%22%0D%0A.txt")
        }
    }

    @Test(
        "One redaction for every text that leaves: errors, debug descriptions, log lines and cURL",
        arguments: HTTPClient.TransportKind.testedKinds)
    func redactionEverywhere(transport: HTTPClient.TransportKind) async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.redirectPolicy = .follow(max: 1)
        try await withServer(configuration: configuration) { server, client in
            server.route("/echo-plain") { request in
                .text("you sent\nAuthorization: \(request.headers["Authorization"] ?? "")\nuser[password]=s3cr3t-nested\n", status: 403)
            }
            server.route("/loop") { _ in .init(status: 302, headers: ["Location": "/loop?access_token=s3cr3t-loop"]) }
            server.route("/ftp") { _ in .init(status: 302, headers: ["Location": "ftp://example.com/?access_token=s3cr3t-ftp"]) }
            server.route("/moved") { _ in .init(status: 200, headers: ["Location": "/next?access_token=s3cr3t-location"]) }
            let logged = NetworkLoggerTests.Capture(level: .debug, port: server.port)
            client.setAuthorizationHeader(token: "s3cr3t-bearer")
            var texts: [String] = []
            func record(_ error: any Error) { texts += ["\(error)", String(reflecting: error), error.localizedDescription] }
            do { _ = try await client.get("echo-plain") } catch { record(error) }
            do { _ = try await client.get("loop") } catch { record(error) }
            do { _ = try await client.get("ftp") } catch { record(error) }
            _ = try await client.get("moved")
            _ = try await client.post("post", parameters: ["user": ["password": "s3cr3t-form"], "name": "ada"])
            let operation = client.operation(
                with: try client.request(method: .post, path: "post", parameters: ["user": ["password": "s3cr3t-curl"]]), success: nil,
                failure: nil)
            texts.append(operation.cURLDescription)
            let withPassword = HTTPClient(baseURL: URL(string: "http://ada:s3cr3t-base@127.0.0.1:\(server.port)/")!)
            do { _ = try await withPassword.get("ftp://nowhere/?token=s3cr3t-path") } catch { record(error) }
            texts += logged.lines
            let all = texts.joined(separator: "\n")
            #expect(texts.count > 10)
            for secret in [
                "s3cr3t-bearer", "s3cr3t-nested", "s3cr3t-loop", "s3cr3t-ftp", "s3cr3t-location", "s3cr3t-form", "s3cr3t-curl",
                "s3cr3t-base", "s3cr3t-path",
            ] {
                #expect(!all.contains(secret), "\(secret) leaked")
            }
            #expect(
                all.contains("user[password]=<redacted>") || all.contains("user%5Bpassword%5D=%3Credacted%3E"),
                "\(Excerpt.of(all, showing: ["password"]))")
        }
    }
}

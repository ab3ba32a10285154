import Conveyor
import ConveyorTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `HTTPResponseHead`: what serializers, hooks and results read of a response, and the Foundation
/// response built from it only when asked.
@Suite("Response heads: Conveyor's head, and HTTPURLResponse built on first use")
struct ResponseHeadTests {
    /// A serializer written as a user would: it reads the head by `HTTPURLResponse`'s member names.
    struct EchoHeadSerializer: ResponseSerializer {
        func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> String {
            "\(response.statusCode) \(response.mimeType ?? "-") \(response.textEncodingName ?? "-") \(response.value(forHTTPHeaderField: "x-repeated") ?? "-")"
        }
    }

    static let rawAnswer = Data(
        ("HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=\"ISO-8859-1\"\r\nX-Repeated: a\r\nX-Repeated: b\r\n"
            + "Content-Length: 5\r\nConnection: close\r\n\r\nhello").utf8)

    @Test(
        "The head a serializer and the operation see: status, fields (repeats joined), type, charset, length",
        arguments: HTTPClient.TransportKind.testedKinds)
    func headOverTheWire(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/head") { _ in .init(body: .raw(Self.rawAnswer)) }
        let client = testClient(server, transport)
        let response = try await client.response(
            for: try client.request(method: .get, path: "head"), responseSerializer: EchoHeadSerializer())
        #expect(response.value == "200 text/plain ISO-8859-1 a, b")
        let head = response.head
        #expect(head.statusCode == 200)
        #expect(head.httpVersion == "HTTP/1.1")
        #expect(head.url == server.baseURL.appendingPathComponent("head"))
        #expect(head.expectedContentLength == 5)
        #expect(head.headers["X-REPEATED"] == "a, b")
        #expect(head.value(forHTTPHeaderField: "content-length") == "5")
        // The Foundation response says the same, and is built once.
        let foundation = head.urlResponse
        #expect(foundation === head.urlResponse)
        #expect(foundation === response.response)
        #expect(foundation.statusCode == 200)
        #expect(foundation.value(forHTTPHeaderField: "X-Repeated") == "a, b")
        #expect(foundation.url == head.url)
    }

    @Test("The operation's response is its head's Foundation response; hooks get the head", arguments: HTTPClient.TransportKind.testedKinds)
    func operationResponse(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let operation = client.operation(with: try client.request(method: .get, path: "get"), success: nil, failure: nil)
        let seen = Counter()
        operation.setResponseReceivedBlock { _, head in
            if head.statusCode == 200, head.mimeType == "application/json" { seen.increment() }
        }
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error == nil)
        let head = try #require(operation.responseHead)
        #expect(seen.count == 1)
        #expect(operation.response === head.urlResponse)
        #expect(operation.response?.statusCode == head.statusCode)
    }

    @Test("Built from parts: the last Content-Type counts, a bad length is -1, no charset is nil")
    func fromParts() throws {
        let url = try #require(URL(string: "http://example.com/a"))
        let head = HTTPResponseHead(
            url: url, statusCode: 404, headers: ["Content-Type": "text/html, application/JSON; charset=utf-8", "Content-Length": "12, 13"])
        #expect(head.mimeType == "application/json")
        #expect(head.textEncodingName == "utf-8")
        #expect(head.expectedContentLength == -1)
        let bare = HTTPResponseHead(url: url, statusCode: 204, headers: [:])
        #expect(bare.mimeType == nil && bare.textEncodingName == nil && bare.expectedContentLength == -1)
        #expect(bare.urlResponse.statusCode == 204)
        #expect("\(head)".hasPrefix("HTTP/1.1 404"))
    }

    @Test("Wrapping a Foundation response keeps it, and reads its fields")
    func wrapping() throws {
        let url = try #require(URL(string: "http://example.com/b"))
        let foundation = try #require(
            HTTPURLResponse(
                url: url, statusCode: 201, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "text/plain", "ETag": "\"x\""]))
        let head = HTTPResponseHead(foundation)
        #expect(head.urlResponse === foundation)
        #expect(head.statusCode == 201 && head.url == url)
        #expect(head.value(forHTTPHeaderField: "etag") == "\"x\"")
        #expect(head.headers["etag"] == "\"x\"" && head.headers.count == 2)
        #expect(head.mimeType == "text/plain")
    }
}

import Conveyor
import ConveyorTesting
import Foundation
import Testing

@Suite("LocalHTTPServer speaks HTTP/1.1")
struct LocalHTTPServerTests {
    @Test("Chunked request bodies are de-chunked and recorded")
    func chunkedRequest() async throws {
        try await withServer { server, _ in
            var request = URLRequest(url: server.baseURL.appendingPathComponent("post"))
            request.httpMethod = "POST"
            let payload = Data((0..<100_000).map { UInt8($0 % 251) })
            request.httpBodyStream = InputStream(data: payload)
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(!data.isEmpty)
            let received = try #require(server.receivedRequests.last)
            #expect(received.wasChunked)
            #expect(received.body == payload)
        }
    }

    @Test("Chunked responses from a streaming route arrive whole")
    func chunkedResponse() async throws {
        try await withServer { server, client in
            server.route("/stream") { _ in
                .init(
                    headers: ["Content-Type": "text/plain"],
                    body: .stream(chunked: true) { writer in
                        for index in 0..<10 { try writer.write(Data("line \(index)\n".utf8)) }
                    })
            }
            let text = String(decoding: try await client.get("stream"), as: UTF8.self)
            #expect(text.split(separator: "\n").count == 10)
        }
    }

    @Test("Keep-alive: many sequential requests reuse connections and are all recorded in order")
    func keepAlive() async throws {
        try await withServer { server, client in
            for index in 0..<20 { _ = try await client.get("get", parameters: ["i": index]) }
            let date = try #require(try await client.head("get").value(forHTTPHeaderField: "Date"))
            #expect(date.wholeMatch(of: /[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT/) != nil, "\(date)")
            #expect(server.receivedRequests.compactMap { $0.queryValue("i") } == (0..<20).map(String.init))
        }
    }

    @Test("Stopping twice is harmless and the port stops answering")
    func stop() async throws {
        let server = try LocalHTTPServer.started()
        let client = HTTPClient(baseURL: server.baseURL)
        _ = try await client.get("get")
        server.stop()
        server.stop()
        #expect(!server.isRunning)
        await #expect(throws: ConveyorError.self) { try await client.get("get") }
    }
}

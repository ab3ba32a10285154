import Conveyor
import ConveyorTesting
import Foundation
import Testing

@Suite("async/await over the operation core")
struct AsyncAPITests {
    struct Echo: Decodable, Sendable {
        let method: String
        let args: [String: String]
        let url: String
    }

    @Test("get returns the body; get(as:) decodes it")
    func getDataAndDecodable() async throws {
        try await withServer { _, client in
            let data = try await client.get("get", parameters: ["q": "swift"])
            #expect(data.jsonObject["method"] as? String == "GET")
            let echo = try await client.get("get", parameters: ["q": "swift"], as: Echo.self)
            #expect(echo.args == ["q": "swift"])
        }
    }

    @Test("A JSON body that does not decode is responseSerializationFailed with the body; HTML is refused by type")
    func decodingFailure() async throws {
        try await withServer { _, client in
            await #expect {
                try await client.get("json", as: Echo.self)
            } throws: { error in
                guard case .responseSerializationFailed(let underlying, _, let data) = error as? ConveyorError else { return false }
                return underlying is DecodingError && data.map { String(decoding: $0, as: UTF8.self) }?.contains("slideshow") == true
            }
            await #expect {
                try await client.get("html", as: Echo.self)
            } throws: { error in
                if case .unacceptableContentType("text/html", _, _, _) = error as? ConveyorError { true } else { false }
            }
        }
    }

    @Test("Every verb sends its method", arguments: [HTTPMethod.post, .put, .patch, .delete])
    func verbs(method: HTTPMethod) async throws {
        try await withServer { _, client in
            let parameters: Parameters = ["k": "v"]
            let data: Data
            switch method {
            case .post: data = try await client.post("anything", parameters: parameters)
            case .put: data = try await client.put("anything", parameters: parameters)
            case .patch: data = try await client.patch("anything", parameters: parameters)
            default: data = try await client.delete("anything", parameters: parameters)
            }
            let echo = data.jsonObject
            #expect(echo["method"] as? String == method.rawValue)
            let value = method == .delete ? (echo["args"] as? [String: Any])?["k"] : (echo["form"] as? [String: Any])?["k"]
            #expect(value as? String == "v")
        }
    }

    @Test("head returns the response head without a body")
    func head() async throws {
        try await withServer { server, client in
            let response = try await client.head("get")
            #expect(response.statusCode == 200)
            #expect(server.receivedRequests.last?.method == "HEAD")
        }
    }

    @Test("response(method:path:) carries request, response, data and metrics")
    func fullResponse() async throws {
        try await withServer { _, client in
            let response = try await client.response(method: .get, path: "bytes/2048")
            #expect(response.data.count == 2048 && response.value == response.data)
            #expect(response.metrics.bytesReceived == 2048)
            #expect(response.metrics.timeToFirstResponse.map { $0 <= response.metrics.duration } == true)
            #expect(response.request.url?.path == "/bytes/2048")
        }
    }

    @Test("Cancelling the awaiting Task cancels the operation")
    func taskCancellation() async throws {
        try await withServer { server, client in
            let held = HeldRoute(server)
            defer { held.release() }
            let task = Task { try await client.get("hold") }
            await held.arrived()
            task.cancel()
            await #expect {
                try await task.value
            } throws: { error in
                (error as? ConveyorError)?.isCancelled == true
            }
        }
    }

    @Test("200 concurrent GETs through one client all succeed")
    func concurrentGets() async throws {
        try await withServer { server, client in
            try await withThrowingTaskGroup(of: String?.self) { group in
                for index in 0..<200 {
                    group.addTask { try await client.get("get", parameters: ["i": index], as: Echo.self).args["i"] }
                }
                var seen = Set<String>()
                for try await value in group { if let value { seen.insert(value) } }
                #expect(seen.count == 200)
            }
            #expect(server.requestCount(path: "/get") == 200)
        }
    }
}

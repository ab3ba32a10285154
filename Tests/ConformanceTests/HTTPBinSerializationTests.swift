import Conveyor
import Foundation
import Testing

/// Request serializers against httpbin's own parsers.
@Suite("Serializers conform with httpbin")
struct HTTPBinSerializationTests {
    let client: HTTPClient

    init() async throws {
        client = HTTPClient(baseURL: try await HTTPBin.baseURL())
    }

    func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("The nested vector decodes back in args (query) and form (body)")
    func nestedVector() async throws {
        let parameters: Parameters = ["key1": "value1", "key2": ["key": [1, "value"]]]
        let args = try object(try await client.get("get", parameters: parameters))["args"] as? [String: Any]
        #expect(args?["key1"] as? String == "value1")
        #expect(args?["key2[key][]"] as? [String] == ["1", "value"])
        let form = try object(try await client.post("post", parameters: parameters))["form"] as? [String: Any]
        #expect(form?["key2[key][]"] as? [String] == ["1", "value"])
    }

    @Test("Reserved characters, ä and emoji survive the query string and the form body")
    func reservedAndUnicode() async throws {
        let value = " :#[]@!$&'()*+,;=/?ä" + String(repeating: "👴🏿👷🏻‍♀️", count: 20)
        let args = try object(try await client.get("get", parameters: ["v": value]))["args"] as? [String: Any]
        #expect(args?["v"] as? String == value)
        let form = try object(try await client.post("post", parameters: ["v": value]))["form"] as? [String: Any]
        #expect(form?["v"] as? String == value)
    }

    @Test("A JSON body is parsed by httpbin into the same object")
    func jsonBody() async throws {
        let echo = try object(
            try await client.post("post", parameters: ["a": [1, 2], "b": ["c": "d"], "n": NSNull()], requestSerializer: .json))
        let json = try #require(echo["json"] as? [String: Any])
        #expect(json["a"] as? [Int] == [1, 2])
        #expect((json["b"] as? [String: Any])?["c"] as? String == "d")
        #expect(json["n"] is NSNull)
    }

    @Test("A multipart body (fields and files, in memory and from disk) is echoed back byte for byte", arguments: [Int64(10_000_000), 0])
    func multipart(threshold: Int64) async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.multipartMemoryThreshold = threshold
        let client = HTTPClient(baseURL: self.client.baseURL!, configuration: configuration)
        let text = "line one\nline two ✓\n"
        let fileURL = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-conformance-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: fileURL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        let echo = try object(
            try await client.post(
                "post", parameters: ["title": "Zoë's upload"],
                constructingBody: { form in
                    try form.append(fileURL: fileURL, name: "document")
                    form.append(data: Data("{\"k\":1}".utf8), name: "meta", fileName: "meta.json", mimeType: "application/json")
                    form.append("plain field", name: "note")
                }))
        #expect(echo["form"] as? [String: String] == ["title": "Zoë's upload", "note": "plain field"])
        #expect(echo["files"] as? [String: String] == ["document": text, "meta": "{\"k\":1}"])
        let headers = echo["headers"] as? [String: String]
        #expect(headers?["Content-Type"]?.hasPrefix("multipart/form-data; boundary=") == true)
    }

    @Test("A file body reaches httpbin whole, with its length and the type its extension names")
    func fileBody() async throws {
        let text = "{\"from\": \"disk\", \"note\": \"Zoë ✓\"}"
        let fileURL = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-conformance-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: fileURL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        let response = try await client.response(
            for: try client.request(method: .put, path: "put", bodyFile: fileURL), responseSerializer: DataResponseSerializer())
        let echo = try object(response.value)
        #expect(echo["data"] as? String == text)
        let headers = echo["headers"] as? [String: String]
        #expect(headers?["Content-Type"] == "application/json")
        #expect(headers?["Content-Length"] == String(Data(text.utf8).count))
    }
}

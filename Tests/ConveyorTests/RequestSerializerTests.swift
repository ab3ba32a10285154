import Conveyor
import ConveyorTesting
import Foundation
import Testing

@Suite("Request serializers: JSON, property list, Encodable, per-call override")
struct RequestSerializerTests {
    let client = HTTPClient(baseURL: URL(string: "http://example.com/")!)

    struct Payload: Codable, Equatable {
        let name: String
        let tags: [String]
        let score: Double
    }

    @Test("JSON: compact body with application/json; charset=utf-8")
    func jsonBody() throws {
        let request = try client.request(
            method: .post, path: "x", parameters: ["a": 1, "b": ["c": true, "d": NSNull()]], requestSerializer: .json)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json; charset=utf-8")
        let body = try #require(request.httpBody)
        #expect(!body.contains(UInt8(ascii: "\n")) && !body.contains(UInt8(ascii: " ")))
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(object["a"] as? Int == 1)
        #expect((object["b"] as? [String: Any])?["d"] is NSNull)
    }

    @Test("JSON: sortsKeys gives stable output for dictionaries and Encodable values")
    func jsonSorted() throws {
        let serializer = JSONRequestSerializer(sortsKeys: true)
        let request = try client.request(
            method: .post, path: "x", parameters: ["b": 2, "a": 1, "c": ["z": 1, "y": 2]], requestSerializer: serializer)
        #expect(request.httpBody.map { String(decoding: $0, as: UTF8.self) } == #"{"a":1,"b":2,"c":{"y":2,"z":1}}"#)
        let encoded = try client.request(
            method: .post, path: "x", body: Payload(name: "n", tags: [], score: 1), requestSerializer: serializer)
        #expect(encoded.httpBody.map { String(decoding: $0, as: UTF8.self) } == #"{"name":"n","score":1,"tags":[]}"#)
    }

    @Test(
        "JSON: NaN, infinity and non-JSON types fail with parameterEncodingFailed naming the key path",
        arguments: ["nan", "inf", "obj"])
    func jsonInvalid(key: String) {
        let value: Any =
            switch key {
            case "nan": Double.nan
            case "inf": Double.infinity
            default: URLRequest(url: URL(string: "http://x")!)
            }
        #expect {
            try client.request(method: .post, path: "x", parameters: ["outer": [key: value]], requestSerializer: .json)
        } throws: { error in
            guard case .parameterEncodingFailed(.unsupportedValue(let path, _)) = error as? ConveyorError else { return false }
            return path == "outer.\(key)"
        }
    }

    @Test("An invalid parameter fails the verb's operation before any traffic")
    func invalidBeforeTraffic() async throws {
        try await withServer { server, client in
            await #expect {
                try await client.post("post", parameters: ["bad": Double.nan], requestSerializer: .json)
            } throws: { error in
                if case .parameterEncodingFailed = error as? ConveyorError { return true } else { return false }
            }
            #expect(server.receivedRequests.isEmpty)
        }
    }

    @Test("JSON for GET, HEAD and DELETE goes into the query string", arguments: [HTTPMethod.get, .head, .delete])
    func jsonQueryMethods(method: HTTPMethod) throws {
        let request = try client.request(method: method, path: "x", parameters: ["q": "a b"], requestSerializer: .json)
        #expect(request.url?.query == "q=a%20b")
        #expect(request.httpBody == nil)
    }

    @Test("Encodable bodies: JSON through the encoder, form through flattening, round-tripped by the server")
    func encodableRoundTrip() async throws {
        try await withServer { server, client in
            let payload = Payload(name: "Zoë", tags: ["a", "b"], score: 2.5)
            let echo = try await client.post("post", body: payload, requestSerializer: .json).jsonObject
            let json = try #require(echo["json"] as? [String: Any])
            #expect(json["name"] as? String == "Zoë" && json["tags"] as? [String] == ["a", "b"] && json["score"] as? Double == 2.5)
            let form = try await client.response(method: .post, path: "post", body: payload).data.jsonObject["form"] as? [String: Any]
            #expect(form?["name"] as? String == "Zoë")
            #expect(form?["tags[]"] as? [String] == ["a", "b"])
            #expect(server.receivedRequests.last?.headers["Content-Type"] == "application/x-www-form-urlencoded; charset=utf-8")
        }
    }

    @Test("Encodable form bodies keep their numbers' and booleans' types: 2 is 2, not 2.0; 1 is 1, not true")
    func encodableFormNumbers() throws {
        struct Counts: Encodable {
            let n: Int
            let one: Int
            let flag: Bool
            let ratio: Double
            let nested: [String: Int]
        }
        let counts = Counts(n: 2, one: 1, flag: true, ratio: 2.5, nested: ["k": 3])
        let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:1/")!)
        let numeric = try client.request(method: .post, path: "form", body: counts)
        #expect(String(decoding: numeric.httpBody ?? Data(), as: UTF8.self) == "flag=1&n=2&nested[k]=3&one=1&ratio=2.5")
        let literal = try client.request(
            method: .post, path: "form", body: counts,
            requestSerializer: FormURLEncodedRequestSerializer(encoder: QueryStringEncoder(boolEncoding: .literal)))
        #expect(String(decoding: literal.httpBody ?? Data(), as: UTF8.self) == "flag=true&n=2&nested[k]=3&one=1&ratio=2.5")
    }

    @Test(
        "Property list bodies in XML and binary decode back to the same values",
        arguments: [
            PropertyListSerialization.PropertyListFormat.xml, .binary,
        ])
    func propertyList(format: PropertyListSerialization.PropertyListFormat) async throws {
        try await withServer { server, client in
            let date = Date(timeIntervalSince1970: 1_700_000_000)
            _ = try await client.post(
                "post", parameters: ["name": "plist", "count": 3, "when": date, "blob": Data([1, 2, 3])],
                requestSerializer: PropertyListRequestSerializer(format: format))
            let received = try #require(server.receivedRequests.last)
            #expect(received.headers["Content-Type"] == "application/x-plist; charset=utf-8")
            var detected = PropertyListSerialization.PropertyListFormat.openStep
            let object = try #require(try PropertyListSerialization.propertyList(from: received.body, format: &detected) as? [String: Any])
            #expect(detected == format)
            #expect(object["name"] as? String == "plist" && object["count"] as? Int == 3)
            #expect(object["when"] as? Date == date && object["blob"] as? Data == Data([1, 2, 3]))
        }
    }

    @Test("Property lists have no null: nil is a parameterEncodingFailed error")
    func propertyListNull() {
        #expect {
            try client.request(method: .post, path: "x", parameters: ["n": NSNull()], requestSerializer: .propertyList)
        } throws: { error in
            if case .parameterEncodingFailed = error as? ConveyorError { true } else { false }
        }
    }

    @Test("The client-wide serializer applies to every verb; a per-call one overrides it")
    func clientWideAndOverride() async throws {
        try await withServer { server, client in
            client.requestSerializer = .json
            _ = try await client.post("post", parameters: ["a": 1])
            #expect(server.receivedRequests.last?.headers["Content-Type"] == "application/json; charset=utf-8")
            _ = try await client.post("post", parameters: ["a": 1], requestSerializer: .formURLEncoded)
            #expect(server.receivedRequests.last?.bodyText == "a=1")
        }
    }

    @Test("The nested query-string vector and the reserved characters reach the server intact")
    func queryRoundTrip() async throws {
        try await withServer { server, client in
            let reserved = " :#[]@!$&'()*+,;=/?"
            _ = try await client.get("get", parameters: ["key1": "value1", "key2": ["key": [1, "value"]], "r": reserved, "e": "ä👍🏽"])
            let items = try #require(server.receivedRequests.last?.queryItems)
            #expect(items.map(\.name) == ["e", "key1", "key2[key][]", "key2[key][]", "r"])
            #expect(items.map(\.value) == ["ä👍🏽", "value1", "1", "value", reserved])
        }
    }

    @Test(
        "A form body escapes values as AFNetworking 1.x (/ and ? too) and keeps the brackets of keys",
        arguments: HTTPClient.TransportKind.testedKinds)
    func formBodyEscaping(transport: HTTPClient.TransportKind) async throws {
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        try await withServer(configuration: configuration) { server, client in
            _ = try await client.post("post", parameters: ["user": ["name": "a/b?c", "note": "x y"]])
            let body = try #require(server.receivedRequests.last?.bodyText)
            #expect(body == "user[name]=a%2Fb%3Fc&user[note]=x%20y")
            _ = try await client.post(
                "post", parameters: ["q": "x y"], requestSerializer: FormURLEncodedRequestSerializer(encoder: .init(spaceEncoding: .plus)))
            #expect(server.receivedRequests.last?.bodyText == "q=x+y")
        }
    }
}

import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// Every async verb gives `Data` by default or a `Decodable` with `as:`, and any response
/// serializer's value through `response(method:path:…responseSerializer:)`; `Encodable` values
/// work wherever parameters do.
@Suite("Typed results from every verb")
struct TypedVerbsTests {
    struct Echo: Decodable, Sendable {
        let method: String
        let args: [String: String]
        let form: [String: String]
        let json: Pet?
    }

    struct Pet: Codable, Sendable, Equatable {
        let name: String
        let age: Int
    }

    @Test("get, post, put, patch and delete decode with as:, and return Data without it", arguments: HTTPClient.TransportKind.testedKinds)
    func everyVerb(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        #expect(try await client.get("get", parameters: ["q": "1"], as: Echo.self).args == ["q": "1"])
        #expect(try await client.post("post", parameters: ["a": "b"], as: Echo.self).form == ["a": "b"])
        #expect(try await client.put("put", parameters: ["a": "c"], as: Echo.self).form == ["a": "c"])
        #expect(try await client.patch("patch", parameters: ["a": "d"], as: Echo.self).method == "PATCH")
        #expect(try await client.delete("delete", parameters: ["x": "y"], as: Echo.self).args == ["x": "y"])
        let raw: Data = try await client.post("post", parameters: ["a": "b"])
        #expect(raw.jsonObject["form"] as? [String: String] == ["a": "b"])

        let pet = Pet(name: "Zoë", age: 3)
        #expect(try await client.post("post", body: pet, as: Echo.self, requestSerializer: .json).json == pet)
        #expect(try await client.put("put", body: pet, as: Echo.self, requestSerializer: .json).json == pet)
        #expect(try await client.patch("patch", body: pet, as: Echo.self, requestSerializer: .json).json == pet)
        let request = try client.request(method: .post, path: "post", body: pet, requestSerializer: .json)
        #expect(request.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("application/json") == true)

        // Any response serializer, the same way.
        let text = try await client.response(method: .get, path: "text", responseSerializer: .string)
        #expect(text.value.isEmpty == false && text.statusCode == 200)
        let created = try await client.response(
            method: .post, path: "post", body: pet, requestSerializer: .json, responseSerializer: .decodable(Echo.self))
        #expect(created.value.json == pet)

        // A body that does not decode is a typed serialization failure.
        await #expect {
            _ = try await client.get("get", as: Pet.self)
        } throws: { error in
            if case .responseSerializationFailed = error as? ConveyorError { true } else { false }
        }
    }
}

import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// The async API gets its serializer's value typed, not through the operation's `Any?` (issue
/// 52): a value that `Any?` cannot carry back — an optional serializer's nil — arrives as made.
@Suite("Typed values end to end")
struct TypedAsyncValueTests {
    /// Reads the body as a number, nil when it is not one: a serializer whose value may be nil.
    struct OptionalNumber: ResponseSerializer {
        func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> Int? {
            Int(String(decoding: data, as: UTF8.self))
        }
    }

    @Test("An optional serializer's nil is the value, not a serialization failure", arguments: HTTPClient.TransportKind.testedKinds)
    func optionalNil(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/word") { _ in .text("seven") }
        server.route("/number") { _ in .text("7") }
        let client = testClient(server, transport)
        let word = try await client.response(method: .get, path: "word", responseSerializer: OptionalNumber())
        #expect(word.value == nil)
        #expect(word.data == Data("seven".utf8))
        let number = try await client.response(method: .get, path: "number", responseSerializer: OptionalNumber())
        #expect(number.value == 7)
    }
}

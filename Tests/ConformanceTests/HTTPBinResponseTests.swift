import Conveyor
import Foundation
import Testing

/// Response serializers and operations against httpbin's documents.
@Suite("Response serialization conforms with httpbin")
struct HTTPBinResponseTests {
    let client: HTTPClient

    init() async throws {
        client = HTTPClient(baseURL: try await HTTPBin.baseURL())
    }

    func run(_ operation: HTTPRequestOperation) async -> ConveyorError? {
        await withCheckedContinuation { continuation in
            operation.setCompletionBlock(
                success: { _, _ in continuation.resume(returning: nil) },
                failure: { _, error in continuation.resume(returning: error) })
            client.enqueue(operation)
        }
    }

    @Test("/json through JSONRequestOperation chosen by Accept")
    func json() async throws {
        client.register(JSONRequestOperation.self)
        client.setDefaultHeader("Accept", value: "application/json")
        let operation = client.operation(with: try client.request(method: .get, path: "json"), success: nil, failure: nil)
        #expect(await run(operation)?.description == nil)
        let json = try #require((operation as? JSONRequestOperation)?.responseJSON as? [String: Any])
        #expect(json["slideshow"] != nil)
    }

    @Test("/xml parses into a tree")
    func xml() async throws {
        let operation = XMLRequestOperation(request: try client.request(method: .get, path: "xml"))
        #expect(await run(operation)?.description == nil)
        #expect(operation.responseXMLTree?.name == "slideshow")
        #expect(operation.responseXMLTree?.children(named: "slide").count == 2)
    }

    @Test("/image/png, /image/jpeg and /image/webp are recognised with their pixel size", arguments: ["png", "jpeg", "webp"])
    func images(format: String) async throws {
        let operation = ImageRequestOperation(request: try client.request(method: .get, path: "image/\(format)"))
        #expect(await run(operation)?.description == nil)
        let image = try #require(operation.responseImage)
        #expect(image.format.rawValue == format)
        #expect(image.pixelWidth > 0 && image.pixelHeight > 0)
    }

    @Test("/encoding/utf8 decodes as UTF-8 text")
    func utf8() async throws {
        let text = try await client.response(for: try client.request(method: .get, path: "encoding/utf8"), responseSerializer: .string)
            .value
        #expect(text.contains("∮ E⋅da = Q"))
    }

    @Test(
        "/response-headers sets the Content-Type a JSON operation accepts or refuses",
        arguments: [("application/json", true), ("application/problem+json", true), ("text/plain", false)])
    func contentTypes(type: String, accepted: Bool) async throws {
        let operation = JSONRequestOperation(
            request: try client.request(method: .get, path: "response-headers", parameters: ["Content-Type": type]))
        let error = await run(operation)
        if accepted {
            #expect(error?.description == nil)
        } else {
            guard case .unacceptableContentType(let received, _, _, _) = error else {
                Issue.record("expected a content-type failure, got \(String(describing: error))")
                return
            }
            #expect(received == type)
        }
    }

    @Test("/status/204 gives empty values")
    func noContent() async throws {
        let request = try client.request(method: .get, path: "status/204")
        #expect(try await client.response(for: request, responseSerializer: .data).value.isEmpty)
        #expect(try await client.response(for: request, responseSerializer: .decodable(Empty.self)).value == Empty.value)
    }

    @Test("/bytes/{n} downloads to a file of n bytes")
    func bytesToFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-httpbin-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try await client.download("bytes/65536", to: .directory(directory))
        #expect(try Data(contentsOf: file).count == 65536)
    }

    @Test("/html is refused by the JSON serializer with a readable error")
    func html() async throws {
        let error = try #require(await run(JSONRequestOperation(request: try client.request(method: .get, path: "html"))))
        #expect(error.description.contains("unacceptable content type text/html"))
        #expect(error.description.contains("Herman Melville") || error.description.contains("<!DOCTYPE html>"))
    }
}

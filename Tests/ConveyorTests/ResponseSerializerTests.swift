import Conveyor
import ConveyorTesting
import Foundation
import Synchronization
import Testing

@Suite("Response serializers and the content-type operations")
struct ResponseSerializerTests {
    /// Runs `operation` through `client` and returns the probe's outcome.
    func run(_ operation: HTTPRequestOperation, on client: HTTPClient) async -> Outcome {
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        return await probe.outcome()
    }

    @Test("A client with JSONRequestOperation registered builds one for Accept: application/json or a .json path, not otherwise")
    func jsonRegistration() async throws {
        try await withServer { server, client in
            client.register(JSONRequestOperation.self)
            server.route("/data.json") { _ in .json(["k": "v"]) }
            let plain = client.operation(with: try client.request(method: .get, path: "json"), success: nil, failure: nil)
            #expect(type(of: plain) == HTTPRequestOperation.self)
            #expect(
                type(of: client.operation(with: try client.request(method: .get, path: "data.json"), success: nil, failure: nil))
                    == JSONRequestOperation.self)
            client.setDefaultHeader("Accept", value: "application/json")
            let operation = try #require(
                client.operation(with: try client.request(method: .get, path: "json"), success: nil, failure: nil) as? JSONRequestOperation)
            _ = await run(operation, on: client)
            let slideshow = (operation.responseJSON as? [String: Any])?["slideshow"] as? [String: Any]
            #expect(slideshow?["author"] as? String == "Conveyor")
        }
    }

    @Test("HTML sent to a JSON operation fails with a self-explanatory content-type error")
    func htmlRejected() async throws {
        try await withServer { _, client in
            let operation = JSONRequestOperation(request: try client.request(method: .get, path: "html"))
            let error = try #require(await run(operation, on: client).error)
            guard case .unacceptableContentType(let type, let acceptable, _, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(type == "text/html" && acceptable.contains("application/json"))
            let text = error.description
            #expect(
                text.contains("unacceptable content type text/html") && text.contains("application/json")
                    && text.contains("<h1>Conveyor</h1>"))
        }
    }

    @Test(
        "Invalid, truncated and lying JSON fail with the parser error and the body",
        arguments: ["{bad json", "{\"a\": [1, 2", "<html>not json</html>"])
    func invalidJSON(body: String) async throws {
        try await withServer { server, client in
            server.route("/broken") { _ in .text(body, contentType: "application/json") }
            let error = try #require(
                await run(JSONRequestOperation(request: try client.request(method: .get, path: "broken")), on: client).error)
            guard case .responseSerializationFailed(_, let response, let data) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(response?.statusCode == 200 && data == Data(body.utf8))
        }
    }

    @Test("+json types are JSON; removesKeysWithNullValues drops nulls; whitespace is an empty body")
    func jsonVariants() async throws {
        try await withServer { server, client in
            server.route("/api") { _ in .text(#"{"a":null,"b":{"c":null,"d":1}}"#, contentType: "application/vnd.api+json") }
            server.route("/blank") { _ in .text(" \n\t ", contentType: "application/json") }
            let operation = JSONRequestOperation(request: try client.request(method: .get, path: "api"))
            operation.responseSerializer = JSONResponseSerializer(removesKeysWithNullValues: true)
            _ = await run(operation, on: client)
            let object = try #require(operation.responseJSON as? [String: Any])
            #expect(object.keys.sorted() == ["b"] && (object["b"] as? [String: Any])?.keys.sorted() == ["d"])
            let blank = JSONRequestOperation(request: try client.request(method: .get, path: "blank"))
            _ = await run(blank, on: client)
            #expect(blank.responseJSON is NSNull && blank.error == nil)
        }
    }

    @Test("204 and HEAD produce empty values; a Decodable model cannot be empty but Empty can")
    func emptyBodies() async throws {
        struct Model: Decodable, Sendable { let id: Int }
        try await withServer { _, client in
            let noContent = try client.request(method: .get, path: "status/204")
            #expect(try await client.response(for: noContent, responseSerializer: .data).value == Data())
            #expect(try await client.response(for: noContent, responseSerializer: .string).value == "")
            #expect(try await client.response(for: noContent, responseSerializer: .decodable(Empty.self)).value == Empty.value)
            let json = JSONRequestOperation(request: noContent)
            _ = await run(json, on: client)
            #expect(json.responseJSON is NSNull)
            await #expect {
                try await client.response(for: noContent, responseSerializer: .decodable(Model.self))
            } throws: { error in
                guard case .responseSerializationFailed(let underlying, _, _) = error as? ConveyorError else { return false }
                if case .emptyBody(204) = underlying as? ResponseSerializationError { return true } else { return false }
            }
            let head = try client.request(method: .head, path: "json")
            #expect(try await client.response(for: head, responseSerializer: .decodable(Empty.self)).value == Empty.value)
        }
    }

    @Test("Decodable with another DataDecoder: a property list body")
    func propertyListDecodable() async throws {
        struct Settings: Codable, Sendable, Equatable {
            let name: String
            let level: Int
        }
        try await withServer { server, client in
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            let body = try encoder.encode(Settings(name: "x", level: 3))
            server.route("/settings.plist") { _ in .init(headers: ["Content-Type": "application/x-plist"], body: .data(body)) }
            let request = try client.request(method: .get, path: "settings.plist")
            let settings = try await client.response(
                for: request, responseSerializer: .decodable(Settings.self, decoder: PropertyListDecoder())
            ).value
            #expect(settings == Settings(name: "x", level: 3))
            client.register(PropertyListRequestOperation.self)
            let operation = try #require(client.operation(with: request, success: nil, failure: nil) as? PropertyListRequestOperation)
            _ = await run(operation, on: client)
            #expect((operation.responsePropertyList as? [String: Any])?["level"] as? Int == 3)
        }
    }

    @Test("XML parses into a tree; the parser is available too; invalid XML is a positioned error")
    func xml() async throws {
        try await withServer { server, client in
            let operation = XMLRequestOperation(request: try client.request(method: .get, path: "xml"))
            _ = await run(operation, on: client)
            let tree = try #require(operation.responseXMLTree)
            #expect(tree.name == "slideshow" && tree.attributes["title"] == "Sample" && tree.child(named: "slide")?.text == "One")
            #expect(operation.responseXMLParser != nil)
            server.route("/bad.xml") { _ in .text("<a><b></a>", contentType: "application/xml") }
            let bad = XMLRequestOperation(request: try client.request(method: .get, path: "bad.xml"))
            guard case .responseSerializationFailed(let underlying, _, _) = await run(bad, on: client).error,
                case .invalidXML = underlying as? ResponseSerializationError
            else {
                Issue.record("expected invalidXML")
                return
            }
        }
    }

    @Test(
        "Images: each format's type and pixel size from the header",
        arguments: ["png", "jpeg", "gif", "webp", "webp-lossy", "bmp", "tiff", "ico"])
    func images(name: String) async throws {
        try await withServer { _, client in
            let operation = ImageRequestOperation(request: try client.request(method: .get, path: "image/\(name)"))
            _ = await run(operation, on: client)
            let image = try #require(operation.responseImage)
            #expect(image.format.rawValue == (name == "webp-lossy" ? "webp" : name))
            let expected = name == "ico" ? (32, 32) : (3, 2)
            #expect(image.pixelWidth == expected.0 && image.pixelHeight == expected.1)
            #expect(image.decodedByteCount == expected.0 * expected.1 * 4)
        }
    }

    @Test("An image of another type than claimed, or no image at all, is an error")
    func lyingImages() async throws {
        try await withServer { server, client in
            server.route("/lies.png") { _ in .init(headers: ["Content-Type": "image/png"], body: .data(SampleImages.jpeg)) }
            server.route("/text.png") { _ in .init(headers: ["Content-Type": "image/png"], body: .data(Data("not an image".utf8))) }
            for path in ["lies.png", "text.png"] {
                let error = await run(ImageRequestOperation(request: try client.request(method: .get, path: path)), on: client).error
                guard case .responseSerializationFailed(let underlying, _, _) = error,
                    case .notAnImage = underlying as? ResponseSerializationError
                else {
                    Issue.record("\(path): expected notAnImage, got \(String(describing: error))")
                    continue
                }
            }
        }
    }

    @Test("The image processing block runs off the callback queue, before the success block")
    func imageProcessing() async throws {
        try await withServer { _, client in
            let probe = CompletionProbe()
            let ranOnCallbackQueue = LastValue()
            let operation = ImageRequestOperation(
                request: try client.request(method: .get, path: "image/png"),
                processing: { image in
                    ranOnCallbackQueue.set(probe.isCurrent ? 1 : 0, 0)
                    return try EncodedImage(data: SampleImages.gif)
                })
            probe.attach(to: operation)
            client.enqueue(operation)
            _ = await probe.outcome()
            #expect(operation.responseImage?.format == .gif)
            #expect(ranOnCallbackQueue.value.0 == 0)
        }
    }

    @Test("Header sniffing: extended WebP, big-endian TIFF, and truncated headers")
    func headerEdgeCases() throws {
        var vp8x = Data("RIFF".utf8) + Data([0, 0, 0, 0]) + Data("WEBPVP8X".utf8) + Data([10, 0, 0, 0]) + Data([0, 0, 0, 0])
        vp8x += Data([0x3F, 0x01, 0x00, 0xC7, 0x00, 0x00])  // 320 x 200
        let webp = try EncodedImage(data: vp8x)
        #expect(webp.format == .webp && webp.pixelWidth == 320 && webp.pixelHeight == 200)
        var tiff = Data([0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 2])
        tiff += Data([0x01, 0x00, 0x00, 0x03, 0, 0, 0, 1, 0x02, 0x80, 0, 0])  // width SHORT 640
        tiff += Data([0x01, 0x01, 0x00, 0x04, 0, 0, 0, 1, 0, 0, 0x01, 0xE0])  // height LONG 480
        let big = try EncodedImage(data: tiff)
        #expect(big.format == .tiff && big.pixelWidth == 640 && big.pixelHeight == 480)
        #expect(throws: ResponseSerializationError.self) { try EncodedImage(data: SampleImages.png.prefix(20)) }
        #expect(throws: ResponseSerializationError.self) { try EncodedImage(data: Data("GIF89a".utf8)) }
    }

    @Test("The compound serializer uses the first serializer that accepts the content type")
    func compound() async throws {
        try await withServer { _, client in
            let compound = CompoundResponseSerializer([JSONResponseSerializer(), XMLTreeResponseSerializer()])
            let json = JSONRequestOperation(request: try client.request(method: .get, path: "json"))
            json.responseSerializer = compound
            _ = await run(json, on: client)
            #expect(json.responseObject is [String: Any])
            let xml = HTTPRequestOperation(request: try client.request(method: .get, path: "xml"))
            xml.responseSerializer = compound
            _ = await run(xml, on: client)
            #expect((xml.responseObject as? XMLTree)?.name == "slideshow")
            let html = HTTPRequestOperation(request: try client.request(method: .get, path: "html"))
            html.responseSerializer = compound
            if case .unacceptableContentType = await run(html, on: client).error {} else { Issue.record("html accepted") }
        }
    }

    @Test("acceptableContentTypes on an operation overrides its serializer's")
    func perOperationContentTypes() async throws {
        try await withServer { _, client in
            let operation = JSONRequestOperation(request: try client.request(method: .get, path: "text"))
            operation.acceptableContentTypes = ["text/plain"]
            let error = await run(operation, on: client).error
            // Accepted as a content type, then (being text, not JSON) it fails to parse.
            guard case .responseSerializationFailed = error else {
                Issue.record("expected a parse failure, got \(String(describing: error))")
                return
            }
            operation.acceptableContentTypes = nil
            #expect(operation.acceptableContentTypes == JSONResponseSerializer.defaultContentTypes)
        }
    }
}

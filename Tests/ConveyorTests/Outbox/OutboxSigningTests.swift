import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// A client that signs every request it builds, the AFNetworking way: an override of
/// `request(method:path:…)`. The signature numbers each call, standing in for a timestamp.
final class SigningClient: HTTPClient, @unchecked Sendable {
    // Unchecked as its superclass is; the one state it adds sits behind its lock.
    private let signatures = Lock(0)

    /// How many requests were signed.
    var signed: Int { signatures.withLock { $0 } }

    override func request(
        method: HTTPMethod, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil
    ) throws -> URLRequest {
        var request = try super.request(
            method: method, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer)
        let number = signatures.withLock { count -> Int in
            count += 1
            return count
        }
        request.setValue("sig-\(number)", forHTTPHeaderField: "X-Signature")
        // What a body signature would cover: the bytes in memory, or a streamed body's presence.
        let body = request.httpBody.map { "\($0.count) bytes" } ?? (request.httpBodyStream == nil ? "none" : "stream")
        request.setValue(body, forHTTPHeaderField: "X-Signed-Body")
        return request
    }
}

@Suite("Outbox: a client's request(method:path:…) override signs every delivery", .timeLimit(.notAHang))
struct OutboxSigningTests {
    @Test(
        "Deliveries and their retries arrive signed, each attempt freshly; nothing signed is written to disk",
        arguments: HTTPClient.TransportKind.testedKinds)
    func deliveriesAreSigned(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        // Each item's first attempt is refused with a 503, so every item is also retried.
        let seen = Lock(Set<String>())
        server.route("/signed") { request in
            let key = request.headers["Idempotency-Key"] ?? ""
            let first = seen.withLock { $0.insert(key).inserted }
            return first ? .init(status: 503, headers: ["Retry-After": "0"]) : .text("ok", status: 201)
        }
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        configuration.cache = nil
        configuration.monitorsReachability = false
        let client = SigningClient(baseURL: server.baseURL, configuration: configuration)
        let directory = try TemporaryDirectory()
        let outbox = try client.outbox(
            directory: directory.url,
            configuration: OutboxTests.quick {
                $0.inMemoryBodyLimit = 64 * 1024  // the large item is streamed from its file
            })
        let large = Data(repeating: UInt8(ascii: "x"), count: 200 * 1024)
        let source = directory.url.appendingPathComponent("large.bin")
        try large.write(to: source)
        let ids = [
            try await outbox.send(method: .post, path: "signed", parameters: ["n": "1"]),
            try await outbox.send(method: .put, path: "signed", fileURL: source),
            try await outbox.send(method: .delete, path: "signed"),
        ]
        // Written, not signed: the override runs at each delivery, so nothing it adds is stored.
        #expect(client.signed == 0)
        for name in directory.names(in: "items") {
            let contents = try Data(contentsOf: directory.url.appendingPathComponent("items").appendingPathComponent(name))
            #expect(!String(decoding: contents, as: UTF8.self).contains("X-Signature"), "\(name)")
        }
        let log = ResultLog(outbox)
        let results = await log.first(3)
        #expect(results.map(\.id) == ids)
        for result in results {
            guard case .succeeded(let response) = result.outcome else {
                Issue.record("\(result.outcome)")
                continue
            }
            #expect(response.statusCode == 201)
            #expect(response.request.value(forHTTPHeaderField: "X-Signature")?.hasPrefix("sig-") == true)
            #expect(result.item?.headers["X-Signature"] == nil)  // the stored item stays unsigned
        }
        let sent = server.receivedRequests.filter { $0.path == "/signed" }
        #expect(sent.count == 6)  // three items, each refused once and sent again
        let signatures = sent.compactMap { $0.headers["X-Signature"] }
        #expect(signatures.count == 6 && Set(signatures).count == 6, "\(signatures)")  // fresh on every attempt
        #expect(client.signed == 6)
        // The override saw each item's body as it is sent: the form in memory, the file as a stream.
        let bodies = Dictionary(grouping: sent, by: { $0.method }).mapValues { Set($0.compactMap { $0.headers["X-Signed-Body"] }) }
        #expect(bodies["POST"] == ["3 bytes"])
        #expect(bodies["PUT"] == ["stream"])
        #expect(bodies["DELETE"] == ["none"])
        #expect(sent.filter { $0.method == "PUT" }.allSatisfy { $0.body == large })
        #expect(sent.filter { $0.method == "POST" }.allSatisfy { $0.body == Data("n=1".utf8) })
    }
}

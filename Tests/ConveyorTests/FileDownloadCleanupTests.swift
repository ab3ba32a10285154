import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// What a failed or cancelled download leaves on disk: nothing it made. Both found by the
/// independent attack on round 4's lifecycle.
@Suite("File downloads clean up after themselves when they do not succeed", .timeLimit(.notAHang))
struct FileDownloadCleanupTests {
    /// A download that stops after moving its file into place until the test lets it go on,
    /// and says when it has undone a success nobody was told of.
    final class GatedDownload: FileDownloadOperation, @unchecked Sendable {
        // Unchecked as its superclass is; it adds only immutable, thread-safe members.
        let moved = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let undone = AsyncStream.makeStream(of: Void.self)

        override func serializeResponse(
            request: URLRequest, response: HTTPResponseHead, data: Data, bodiless: Bool, serializer: any ResponseSerializer
        ) throws -> Any? {
            let value = try super.serializeResponse(
                request: request, response: response, data: data, bodiless: bodiless, serializer: serializer)
            moved.signal()
            _ = proceed.wait(timeout: .now() + 60)  // only ends a hang: the test signals it after its cancel
            return value
        }

        override func successNotDelivered(_ value: Any?) {
            super.successNotDelivered(value)
            undone.continuation.yield()
        }
    }

    @Test(
        "A cancel that wins after the file was moved into place removes it: the caller heard the download failed",
        arguments: HTTPClient.TransportKind.testedKinds)
    func cancelAfterMove(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        server.route("/file.bin") { _ in .init(headers: ["Content-Type": "application/octet-stream"], body: .data(Data(count: 5000))) }
        let client = testClient(server, transport)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-gated-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let operation = GatedDownload(
            request: URLRequest(url: server.baseURL.appendingPathComponent("file.bin")), destination: .directory(directory))
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                operation.moved.wait()
                continuation.resume()
            }
        }
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("file.bin").path))
        operation.cancel()
        #expect(await probe.outcome().error?.isCancelled == true)
        operation.proceed.signal()
        for await _ in operation.undone.stream { break }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("file.bin").path))
        #expect(operation.destinationURL == nil)
    }

    @Test(
        "A download into the directory it chose for itself removes that directory when it fails",
        arguments: HTTPClient.TransportKind.testedKinds)
    func ownDirectoryRemoved(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        // The head and half the body, then the connection closes: the partial file existed.
        let operation = FileDownloadOperation(request: URLRequest(url: server.baseURL.appendingPathComponent("fault/close-mid-body")))
        guard case .directory(let own) = operation.destination else {
            Issue.record("\(operation.destination)")
            return
        }
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        #expect(await probe.outcome().error != nil)
        #expect(!FileManager.default.fileExists(atPath: own.path), "\(own.path)")
    }
}

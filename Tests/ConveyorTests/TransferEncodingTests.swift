import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// An unknown `Transfer-Encoding` (issue 37, item 16): libcurl 7.88 failed the transfer with
/// error 61 "Unrecognized content encoding type" (the HTTP cache test suite's
/// `headers-store-Transfer-Encoding`). The curl transport hands the body over as it arrived, as
/// it does for an unknown `Content-Encoding`; corelibs URLSession cannot (see the test below).
@Suite("Unknown transfer codings", .timeLimit(.notAHang))
struct TransferEncodingTests {
    /// A raw answer with `Transfer-Encoding: <codings>`: the body delimited by the connection's
    /// close, or chunked when the codings end with `chunked`.
    private static func answer(codings: String) -> LocalHTTPServer.Response {
        let chunked = codings.hasSuffix("chunked")
        let body = chunked ? "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" : "hello world"
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: \(codings)\r\nConnection: close\r\n\r\n"
        return .init(body: .raw(Data((head + body).utf8)))
    }

    static let codings = ["x-custom", "x-custom, chunked", "foo, bar, chunked"]

    @Test("curl: an unknown transfer coding is handed over as it arrived, de-chunked when chunked is last", arguments: codings)
    func curlPassesThrough(codings: String) async throws {
        #if os(Linux)
            try await withServer { server, _ in
                server.route("/te") { _ in Self.answer(codings: codings) }
                let response = try await testClient(server, .curl).response(method: .get, path: "te")
                #expect(response.statusCode == 200 && String(decoding: response.data, as: UTF8.self) == "hello world")
                #expect(response.head.value(forHTTPHeaderField: "Transfer-Encoding") == codings)
            }
        #endif
    }

    @Test("URLSession: an unknown transfer coding fails typed, as cannotDecodeContentData, never as code -1", arguments: codings)
    func urlSessionFailsTyped(codings: String) async throws {
        try await withServer { server, _ in
            server.route("/te") { _ in Self.answer(codings: codings) }
            do {
                let response = try await testClient(server, .urlSession).response(method: .get, path: "te")
                // A URLSession that can pass the body through (Apple platforms) must deliver it whole.
                #expect(String(decoding: response.data, as: UTF8.self) == "hello world")
            } catch let error as ConveyorError {
                guard case .network(let urlError) = error else {
                    Issue.record("not a network error: \(error)")
                    return
                }
                #expect(urlError.code == .cannotDecodeContentData, "\(error)")
                #expect(!error.isConnectivityFailure)
            }
        }
    }
}

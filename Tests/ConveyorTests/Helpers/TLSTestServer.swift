import Foundation
import Synchronization

/// An HTTPS server with a self-signed certificate made for the test: `openssl` generates the
/// certificate, Python's `ssl` module serves it on a random loopback port. It answers every
/// GET with 200 "secure". Stopped (and its files removed) when released.
final class TLSTestServer: Sendable {
    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    let port: Int
    let directory: URL
    private let process: Process.Box

    var baseURL: URL { URL(string: "https://127.0.0.1:\(port)/")! }

    private static let script = """
    import http.server, ssl, sys
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"secure")
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """

    /// Starts a server off Swift Concurrency's pool: generating the key and starting Python
    /// block for a few hundred milliseconds.
    static func start() async throws -> TLSTestServer {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try TLSTestServer() }) }
        }
    }

    private init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                             "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { throw SetupError(description: "openssl could not make a certificate") }
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", Self.script, certificate, key]
        let output = Pipe()
        python.standardOutput = output
        python.standardError = FileHandle.nullDevice
        try python.run()
        // The first line is the port, printed once the socket listens.
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            python.terminate()
            throw SetupError(description: "the Python TLS server did not start")
        }
        self.port = port
        self.process = Process.Box(python)
    }

    deinit {
        process.value.terminate()
        try? FileManager.default.removeItem(at: directory)
    }
}

extension Process {
    /// Holds a process that only `terminate()` touches after launch (thread-safe in Foundation).
    final class Box: @unchecked Sendable {
        // @unchecked Sendable: immutable after init; `terminate()` is safe from any thread.
        let value: Process
        init(_ value: Process) { self.value = value }
    }
}

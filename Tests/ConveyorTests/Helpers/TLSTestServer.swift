import ConveyorTestSupport
import Foundation
import Synchronization

/// An HTTPS server with a certificate from a throwaway certificate authority made for the
/// test. `openssl` makes the CA and the server's certificate (for 127.0.0.1, localhost and
/// api.conveyor.test, a name only address overrides resolve);
/// hypercorn (installed into `.build/tls-venv` on first use, like httpbin) serves it on a
/// random loopback port with ALPN offering HTTP/2 and HTTP/1.1. Every request gets 200
/// "secure" with `X-HTTP-Version` saying which protocol the server spoke, and
/// `X-Saw-Authorization` / `X-Saw-Proxy-Authorization` (`yes` or `no`) saying which credential
/// fields arrived. Stopped, and its
/// files removed, when released; it also stops by itself when the test process is gone.
final class TLSTestServer: Sendable {
    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    let port: Int
    let directory: URL
    /// The CA's certificate (PEM): trusting it makes the server's certificate valid.
    let certificateAuthority: URL
    /// The base64 SHA-256 of the server certificate's SubjectPublicKeyInfo.
    let publicKeyPin: String
    private let process: ChildProcess

    var baseURL: URL { URL(string: "https://127.0.0.1:\(port)/")! }

    /// The server named `name`, made and started on first use and shared by the tests of the
    /// run (each start makes two RSA keys and a Python process: CPU the timing tests need).
    /// The work runs off Swift Concurrency's pool: key generation, pip and Python block.
    static func shared(_ name: String = "main") async throws -> TLSTestServer {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        try servers.withLock { servers in
                            if let server = servers[name] { return server }
                            let server = try TLSTestServer()
                            servers[name] = server
                            return server
                        }
                    })
            }
        }
    }

    private static let servers = Mutex<[String: TLSTestServer]>([:])

    private init() throws {
        let venv = try SetupTools.virtualenv("tls-venv", packages: ["hypercorn"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-tls-\(UUID().uuidString)")
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        let extensions = [
            "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:api.conveyor.test", "basicConstraints=CA:FALSE", "extendedKeyUsage=serverAuth",
        ]
        try Data((extensions.joined(separator: "\n") + "\n").utf8).write(to: directory.appendingPathComponent("leaf.ext"))
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2",
                "-subj", "/CN=Conveyor Throwaway Test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("leaf.key"), "-out", path("leaf.csr"), "-subj", "/CN=127.0.0.1"],
            [
                "x509", "-req", "-in", path("leaf.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
                "-out", path("leaf.pem"), "-days", "2", "-extfile", path("leaf.ext"),
            ],
        ]
        for arguments in steps { _ = try SetupTools.run("/usr/bin/env", ["openssl"] + arguments, what: "openssl \(arguments[0])") }
        certificateAuthority = directory.appendingPathComponent("ca.pem")
        let pin = try SetupTools.run(
            "/bin/sh",
            [
                "-c",
                "openssl x509 -in '\(path("leaf.pem"))' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            ], what: "computing the pin")
        publicKeyPin = pin.trimmingCharacters(in: .whitespacesAndNewlines)

        let output = Pipe()
        let python = try ChildProcess(
            venv.appendingPathComponent("bin/python").path,
            ["-c", Self.script, String(ProcessInfo.processInfo.processIdentifier), path("leaf.pem"), path("leaf.key")],
            standardOutput: .pipe(output), standardError: .null)
        // The first line is the port, printed once the socket listens.
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            python.terminate()
            throw SetupError(description: "the hypercorn TLS server did not start")
        }
        self.port = port
        self.process = python
    }

    deinit {
        process.terminate()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Binds the port, prints it, serves with hypercorn (HTTP/2 and HTTP/1.1 over TLS) and
    /// stops when its parent (the test process) is gone.
    private static let script = """
        import asyncio, os, socket, sys
        from hypercorn.asyncio import serve
        from hypercorn.config import Config
        parent, certificate, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.startup":
                        await send({"type": "lifespan.startup.complete"})
                    elif message["type"] == "lifespan.shutdown":
                        await send({"type": "lifespan.shutdown.complete"})
                        return
            # Which credential fields reached the origin (the proxy tests read them).
            names = {name.lower() for name, _ in scope.get("headers", [])}
            saw = lambda name: b"yes" if name in names else b"no"
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"text/plain"), (b"x-http-version", scope["http_version"].encode()),
                (b"x-saw-authorization", saw(b"authorization")), (b"x-saw-proxy-authorization", saw(b"proxy-authorization"))]})
            await send({"type": "http.response.body", "body": b"secure"})
        async def orphaned():
            while os.getppid() == parent:
                await asyncio.sleep(0.5)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        sock.set_inheritable(True)
        config = Config()
        config.bind = ["fd://%d" % sock.fileno()]
        config.certfile, config.keyfile = certificate, key
        config.alpn_protocols = ["h2", "http/1.1"]
        # Connections stay open between a test's requests even when a loaded run delays the
        # second one by seconds (hypercorn's default, 5 s, closed one: a test saw no reuse).
        config.keep_alive_timeout = 120
        config.accesslog = None
        config.errorlog = None
        print(sock.getsockname()[1], flush=True)
        asyncio.run(serve(app, config, shutdown_trigger=orphaned))
        """
}

import ConveyorTestSupport
import Foundation
import Synchronization

/// A real proxy server for the proxy tests: `pproxy` (from PyPI, installed into `.build/proxy-venv`
/// on first use, like httpbin), listening on a random loopback port as an HTTP proxy (plain
/// requests forwarded, `CONNECT` tunnels) and a SOCKS5 proxy at once — or as an HTTPS proxy —
/// with or without a user name and password. Stopped when released, and by itself when the test process is gone.
final class ProxyTestServer: Sendable {
    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    let port: Int
    /// The user name and password the proxy demands, nil for none.
    let credentials: (user: String, password: String)?
    private let process: ChildProcess

    /// The server with `credentials` (nil: an open proxy), started on first use and shared by
    /// the tests of the run. Set-up blocks (pip, a Python process), so it runs off Swift
    /// Concurrency's pool.
    ///
    /// `tls`: serve as an HTTPS proxy (HTTP over TLS) with that server's certificate, for
    /// 127.0.0.1, from the TLS test server's throwaway authority.
    static func shared(credentials: (user: String, password: String)? = nil, tls: TLSTestServer? = nil) async throws -> ProxyTestServer {
        let key = (credentials.map { "\($0.user):\($0.password)" } ?? "") + (tls.map { " tls \($0.directory.path)" } ?? "")
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        try servers.withLock { servers in
                            if let server = servers[key] { return server }
                            let server = try ProxyTestServer(credentials: credentials, tls: tls)
                            servers[key] = server
                            return server
                        }
                    })
            }
        }
    }

    private static let servers = Mutex<[String: ProxyTestServer]>([:])

    private init(credentials: (user: String, password: String)?, tls: TLSTestServer?) throws {
        let venv = try SetupTools.virtualenv("proxy-venv", packages: ["pproxy==2.7.9"])
        self.credentials = credentials
        let protocols = tls == nil ? "http+socks5" : "http+ssl"
        let uri = "\(protocols)://127.0.0.1:0" + (credentials.map { "#\($0.user):\($0.password)" } ?? "")
        let certificate = tls.map {
            [$0.directory.appendingPathComponent("leaf.pem").path, $0.directory.appendingPathComponent("leaf.key").path]
        }
        let output = Pipe()
        process = try ChildProcess(
            venv.appendingPathComponent("bin/python").path,
            ["-c", Self.launcher, String(ProcessInfo.processInfo.processIdentifier), uri] + (certificate ?? []),
            standardOutput: .pipe(output), standardError: .null)
        // The first line is the port, printed once the socket listens.
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw SetupError(description: "pproxy did not start (pip install pproxy into .build/proxy-venv; is PyPI reachable?)")
        }
        self.port = port
    }

    deinit { process.terminate() }

    /// Starts pproxy's server for the URI (port 0: the kernel chooses), prints the port once it
    /// listens, and stops when its parent (the test process) is gone.
    private static let launcher = """
        import asyncio, os, sys
        import pproxy.server as server
        parent, uri = int(sys.argv[1]), sys.argv[2]
        listener = server.proxies_by_uri(uri)
        if len(sys.argv) > 4:
            for context in server.sslcontexts:
                context.load_cert_chain(sys.argv[3], sys.argv[4])
        args = {"listen": [], "rserver": [], "ulisten": [], "urserver": [], "block": None, "alived": 0,
                "salgorithm": "fa", "debug": None, "v": None, "sslfile": None, "pac": None, "gets": [],
                "authtime": -1, "sys": False, "ruport": False, "daemon": False, "test": None, "httpget": {}}
        async def run():
            listening = await listener.start_server(args)
            print(listening.sockets[0].getsockname()[1], flush=True)
            while os.getppid() == parent:
                await asyncio.sleep(0.5)
        asyncio.run(run())
        """
}

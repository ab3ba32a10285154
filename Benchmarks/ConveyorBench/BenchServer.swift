import ConveyorTestSupport
import ConveyorTesting
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where scenarios 1–4 fetch from: the in-process LocalHTTPServer (the default), or a local
/// nginx serving the same bodies from files (`--server nginx`), whose lower, steadier cost
/// leaves the clients' own cost more visible.
final class BenchServer: Sendable {
    let baseURL: URL
    /// nginx's HTTPS (HTTP/2) address, `https://127.0.0.1:<port>/`; nil for the in-process server.
    let tlsBaseURL: URL?
    /// The self-signed certificate nginx's HTTPS server presents (trust it as an authority).
    let certificateAuthority: URL?
    /// nginx's Unix domain socket, serving the same files; nil for the in-process server.
    let unixSocketPath: String?
    /// The port of nginx's HTTP forward proxy to the same server (on 127.0.0.1); nil for the
    /// in-process server.
    let proxyPort: Int?
    private let local: LocalHTTPServer?
    private let root: URL?

    /// Starts the in-process server.
    init() throws {
        let server = try LocalHTTPServer.started()
        local = server
        root = nil
        baseURL = server.baseURL
        tlsBaseURL = nil
        certificateAuthority = nil
        unixSocketPath = nil
        proxyPort = nil
    }

    /// Starts nginx through `Benchmarks/nginx-server` on free loopback ports: HTTP/1.1, and
    /// HTTPS with HTTP/2.
    init(nginxIn directory: URL) throws {
        let port = try Self.freePort()
        let tlsPort = try Self.freePort()
        let proxyPort = try Self.freePort()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("nginx-server")
        try Self.runScript(script, ["start", directory.path, String(port), String(tlsPort), String(proxyPort)])
        local = nil
        root = directory
        baseURL = URL(string: "http://127.0.0.1:\(port)/")!
        tlsBaseURL = URL(string: "https://127.0.0.1:\(tlsPort)/")!
        certificateAuthority = directory.appendingPathComponent("tls/cert.pem")
        unixSocketPath = directory.appendingPathComponent("nginx.sock").path
        self.proxyPort = proxyPort
    }

    /// Answers `POST /upload` with "ok" whatever the body (nginx's configuration already does).
    func acceptUploads() {
        local?.route("/upload") { _ in .text("ok") }
    }

    /// Connections the server has accepted since it started; nil when it cannot tell.
    ///
    /// nginx's count comes from its `stub_status` page, fetched over a connection of its own,
    /// which the count includes: ``newConnections(during:)`` takes that one off.
    func acceptedConnections() -> Int? {
        if let local { return local.acceptedConnectionCount }
        guard let page = Self.fetchStatusPage(port: baseURL.port ?? 80) else { return nil }
        // "Active connections: 1 \nserver accepts handled requests\n 12 12 40 \n..."
        let lines = page.split(separator: "\n")
        guard let index = lines.firstIndex(where: { $0.hasPrefix("server accepts") }), index + 1 < lines.count else { return nil }
        return lines[index + 1].split(separator: " ").first.flatMap { Int($0) }
    }

    /// Runs `work` and counts the connections the server accepted meanwhile.
    func newConnections<T>(during work: () async throws -> T) async rethrows -> (value: T, connections: Int?) {
        let before = acceptedConnections()
        let value = try await work()
        let after = acceptedConnections()
        guard let before, let after else { return (value, nil) }
        return (value, after - before - (local == nil ? 1 : 0))
    }

    /// `GET /nginx_status` over a plain socket (HTTP/1.0, so the server closes when done):
    /// no client under test is involved in counting its own connections.
    private static func fetchStatusPage(port: Int) -> String? {
        let socket = tcpSocket()
        guard socket >= 0 else { return nil }
        defer { close(socket) }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET /nginx_status HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(socket, request, request.count, 0) == request.count else { return nil }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count > 0 {
                response += buffer[..<count]
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        return String(decoding: response, as: UTF8.self)
    }

    /// Serves `data` at `/name` (nginx picks the type from the name's extension).
    func serve(_ name: String, _ data: Data, contentType: String) throws {
        if let local {
            local.route("/" + name) { _ in .init(headers: ["Content-Type": contentType], body: .data(data)) }
        } else if let root {
            try data.write(to: root.appendingPathComponent("www").appendingPathComponent(name))
        }
    }

    func stop() {
        local?.stop()
        if let root {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("nginx-server")
            try? Self.runScript(script, ["stop", root.path])
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// Runs the script with posix_spawn and waitpid: Foundation's `Process.waitUntilExit()`
    /// never returned here once the script had started the nginx daemon (the shell stayed a
    /// zombie, unreaped).
    private static func runScript(_ script: URL, _ arguments: [String]) throws {
        let status = try ChildProcess.spawn("/bin/sh", [script.path] + arguments)
        guard status == 0 else {
            throw NSError(
                domain: "conveyor-bench", code: Int(status),
                userInfo: [NSLocalizedDescriptionKey: "\(script.lastPathComponent) \(arguments.first ?? "") failed"])
        }
    }

    /// A port nothing listens on: bind port 0, read what the kernel chose, close.
    private static func freePort() throws -> Int {
        let socket = tcpSocket()
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(socket) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A new IPv4 TCP socket's descriptor, -1 on failure. `SOCK_STREAM` is an enum in Glibc and
    /// an `Int32` in Darwin, as in `LocalHTTPServer`.
    private static func tcpSocket() -> Int32 {
        #if canImport(Glibc)
            Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
    }

    /// 127.0.0.1:`port` as a socket address.
    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}

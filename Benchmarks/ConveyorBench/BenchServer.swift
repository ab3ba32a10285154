import ConveyorTesting
import Foundation

/// Where scenarios 1–4 fetch from: the in-process LocalHTTPServer (the default), or a local
/// nginx serving the same bodies from files (`--server nginx`), whose lower, steadier cost
/// leaves the clients' own cost more visible.
final class BenchServer: Sendable {
    let baseURL: URL
    private let local: LocalHTTPServer?
    private let root: URL?

    /// Starts the in-process server.
    init() throws {
        let server = try LocalHTTPServer.started()
        local = server
        root = nil
        baseURL = server.baseURL
    }

    /// Starts nginx through `Benchmarks/nginx-server` on a free loopback port.
    init(nginxIn directory: URL) throws {
        let port = try Self.freePort()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("nginx-server")
        try Self.runScript(script, ["start", directory.path, String(port)])
        local = nil
        root = directory
        baseURL = URL(string: "http://127.0.0.1:\(port)/")!
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
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

import ConveyorTesting
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A loopback port that refuses every connection, for as long as the value lives: a socket bound
/// to it that never listens. Stopping a server to free its port instead races with the other
/// suites' servers, which may be given the same port at once (seen: a 404 from another test's
/// server where a refusal was expected).
final class RefusedPort: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        // Shared with the server that may take the port over (``takeOver()``): on Linux two sockets
        // with SO_REUSEADDR may be bound to one port as long as at most one listens.
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard fd >= 0, bound == 0 else {
            if fd >= 0 { _ = close(fd) }
            throw CocoaError(.fileWriteUnknown)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:<port>/`.
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }

    /// A server listening on the port, started while this value still holds it: releasing the
    /// port first would let the kernel hand it to another suite's outgoing connection (seen:
    /// "Address already in use" when the server then bound it).
    /// `routes` are installed before the server starts: a client retrying against the port can
    /// reach it the moment it listens, before a route added afterwards (seen under load: the
    /// outbox's item answered 404 and was final).
    func takeOver(routes: (LocalHTTPServer) -> Void = { _ in }) throws -> LocalHTTPServer {
        let server = LocalHTTPServer()
        routes(server)
        try server.start(port: port)
        return server
    }

    deinit { _ = close(descriptor) }
}

import ConveyorLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on a raw socket that records what a client put on the wire: per
/// connection, the request head, the body bytes its `Content-Length` announced, and how many
/// bytes followed them — bytes LocalHTTPServer would take for the next request. It answers
/// `200 ok` with `Connection: close` once the announced body is in, then reads to the end.
///
/// `holdsBody`: after a head arrives, the body is not read until ``releaseBody()``, so a test
/// can change the file while the upload is under way (the client has sent at most what the
/// socket buffers hold).
final class RecordingSocketServer: Sendable {
    struct Exchange: Sendable {
        let head: String
        let announced: Int?
        let body: Data
        /// Whether the whole announced body arrived.
        let complete: Bool
        /// Bytes after the announced body, until the client closed.
        let trailing: Int
        /// Whether the exchange ended with the client closing the connection (a read of 0 bytes
        /// or a reset), not with the server's own 20 s read timeout.
        var closedByClient = true

        /// The values of the head's field `name`, in order.
        func values(of name: String) -> [String] {
            head.components(separatedBy: "\r\n").dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { return nil }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
    }

    let port: Int
    private let listener: Int32
    private let holdsBody: Bool
    private let exchanges = Lock<[Exchange]>([])
    private let recorded = DispatchSemaphore(value: 0)
    private let headArrived = DispatchSemaphore(value: 0)
    private let bodyGate = DispatchSemaphore(value: 0)
    private let accepted = Lock(0)

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }
    var acceptedConnections: Int { accepted.withLock { $0 } }

    init(holdsBody: Bool = false) throws {
        self.holdsBody = holdsBody
        (listener, port) = try listeningOnLoopback()
        Thread.detachNewThread { [self] in serve() }
    }

    /// Stops accepting. The descriptor is closed by the serving thread as it leaves, never
    /// here: closed under it, its number could go to another test's listening socket, whose
    /// connections this thread would then take.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        bodyGate.signal()
    }

    /// Lets a held body be read (see `holdsBody`).
    func releaseBody() { bodyGate.signal() }

    /// Waits (at most 60 s, which only ends a hang) until a request head has arrived.
    func waitForHead() async -> Bool {
        let semaphore = headArrived
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: semaphore.wait(timeout: .now() + 60) == .success) }
        }
    }

    /// The first `count` connections' exchanges, once recorded (waits at most 60 s for each,
    /// which only ends a hang).
    func exchanges(_ count: Int) async -> [Exchange] {
        let semaphore = recorded
        for _ in 0..<count {
            let arrived = await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: semaphore.wait(timeout: .now() + 60) == .success) }
            }
            if !arrived { break }
        }
        return exchanges.withLock { $0 }
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                close(listener)
                return
            }
            accepted.withLock { $0 += 1 }
            // A bound on every read: a client that stops without closing cannot hold the thread.
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let exchange = handle(connection)
            close(connection)
            if let exchange {
                exchanges.withLock { $0.append(exchange) }
                recorded.signal()
            }
        }
    }

    private func handle(_ connection: Int32) -> Exchange? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var received = Data()
        var timedOut = false
        func readMore() -> Bool {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { timedOut = true }
            guard count > 0 else { return false }
            received.append(contentsOf: buffer[0..<count])
            return true
        }
        let separator = Data("\r\n\r\n".utf8)
        var headEnd: Range<Data.Index>?
        while headEnd == nil {
            guard readMore() else { return nil }
            headEnd = received.range(of: separator)
        }
        let head = String(decoding: received[..<headEnd!.lowerBound], as: UTF8.self)
        received = Data(received[headEnd!.upperBound...])
        headArrived.signal()
        if holdsBody { bodyGate.wait() }
        let probe = Exchange(head: head, announced: nil, body: Data(), complete: false, trailing: 0)
        let announced = probe.values(of: "Content-Length").first.flatMap { Int($0) }
        let wanted = announced ?? 0
        while received.count < wanted, readMore() {}
        let complete = received.count >= wanted
        let body = Data(received.prefix(wanted))
        var trailing = max(0, received.count - wanted)
        if complete {
            let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
            _ = response.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(connection, Int32(SHUT_WR))
            received = Data()
            while readMore() {
                trailing += received.count
                received = Data()
            }
        }
        var exchange = Exchange(head: head, announced: announced, body: body, complete: complete, trailing: trailing)
        exchange.closedByClient = !timedOut
        return exchange
    }
}

/// A TCP socket listening on 127.0.0.1 at a port the system chose, for the raw-socket servers of
/// the tests. - Returns: The socket and its port.
func listeningOnLoopback() throws -> (socket: Int32, port: Int) {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(socket, address, length) == 0 && listen(socket, 8) == 0 && getsockname(socket, address, &length) == 0
        }
    }
    guard socket >= 0, bound else {
        if socket >= 0 { close(socket) }
        throw POSIXError(.EADDRNOTAVAIL)
    }
    return (socket, Int(UInt16(bigEndian: address.sin_port)))
}

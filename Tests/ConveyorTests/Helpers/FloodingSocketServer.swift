import ConveyorLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A raw-socket HTTP/1.1 server (or proxy: it answers whatever request line comes, `CONNECT`
/// included) that answers each request head with the head `answer` chooses and a body of the
/// length it says, written 64 KiB at a time until written or until the client closes the
/// connection. It counts the body bytes it could hand to the socket: a client that stops reading
/// stops them after the socket buffers (a few MB on loopback), one that reads on takes them all.
///
/// For the memory limit tests: a client that keeps a body it should refuse reads the whole of
/// it; one that enforces its limit closes the connection soon after the limit.
final class FloodingSocketServer: Sendable {
    /// What to send for one request: the head (status line and fields, without the blank line
    /// that ends it; `Content-Length` is added) and the body's length.
    struct Answer: Sendable {
        var head: String
        var bodyLength: Int
    }

    let port: Int
    private let listener: Int32
    private let answer: @Sendable (_ requestHead: String) -> Answer
    private let counts = Lock(Counts())
    private let connectionDone = DispatchSemaphore(value: 0)
    private let stopped = Lock(false)

    private struct Counts {
        var written: [Int] = []
        var heads: [String] = []
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }
    /// Body bytes handed to the socket, per connection, in the order connections came.
    var bytesWritten: [Int] { counts.withLock { $0.written } }
    /// Every request head received, in order.
    var requestHeads: [String] { counts.withLock { $0.heads } }

    init(answer: @escaping @Sendable (_ requestHead: String) -> Answer) throws {
        self.answer = answer
        (listener, port) = try listeningOnLoopback()
        Thread.detachNewThread { [self] in serve() }
    }

    deinit { stop() }

    /// Stops accepting (the serving thread closes the descriptor as it leaves). Once: a second
    /// shutdown could hit the descriptor's number after the serving thread closed it, taken
    /// meanwhile by another test's socket.
    func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if first { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    /// Waits (at most 30 s each) until `count` connections have ended: the client closed them,
    /// or every answer was written and the client closed.
    func waitForConnectionsToEnd(_ count: Int) async -> Bool {
        let semaphore = connectionDone
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: (0..<count).allSatisfy { _ in semaphore.wait(timeout: .now() + 30) == .success })
            }
        }
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                close(listener)
                return
            }
            let index = counts.withLock { counts in
                counts.written.append(0)
                return counts.written.count - 1
            }
            Thread.detachNewThread { [self] in
                // A bound on every read and write: a client that stops without closing cannot hold the thread.
                var timeout = timeval(tv_sec: 20, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                handle(connection, index: index)
                close(connection)
                connectionDone.signal()
            }
        }
    }

    /// Answers request after request on one connection until the client closes it.
    private func handle(_ connection: Int32, index: Int) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var received = Data()
        let separator = Data("\r\n\r\n".utf8)
        while true {
            var headEnd = received.range(of: separator)
            while headEnd == nil {
                let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return }
                received.append(contentsOf: buffer[0..<count])
                headEnd = received.range(of: separator)
            }
            let head = String(decoding: received[..<headEnd!.lowerBound], as: UTF8.self)
            // Request bodies are not expected here: what follows the head is the next request.
            received = Data(received[headEnd!.upperBound...])
            counts.withLock { $0.heads.append(head) }
            let reply = answer(head)
            guard write(Data("\(reply.head)\r\nContent-Length: \(reply.bodyLength)\r\n\r\n".utf8), on: connection) else { return }
            let chunk = Data(repeating: UInt8(ascii: "x"), count: 64 * 1024)
            var left = reply.bodyLength
            while left > 0 {
                let piece = left >= chunk.count ? chunk : chunk.prefix(left)
                guard write(piece, on: connection) else { return }
                left -= piece.count
                counts.withLock { $0.written[index] += piece.count }
            }
        }
    }

    private func write(_ data: Data, on connection: Int32) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = send(connection, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0, errno == EINTR { continue }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }
    }
}

import Conveyor
import ConveyorLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One accepted TCP connection: buffered reads, whole writes, and the HTTP/1.1 request parser.
final class ServerConnection: @unchecked Sendable {
    // @unchecked: `fd` is immutable; `buffer` is only touched by the connection's own thread;
    // `isClosed`, the only state shared with stop(), is behind one Mutex.
    let fd: Int32
    private var buffer = [UInt8]()
    /// Guards against closing (or shutting down) a descriptor number the kernel has reused.
    private let isClosed = Lock(false)

    /// Requests larger than this are refused, so a test cannot exhaust memory by accident.
    static let maximumHeaderBytes = 1 << 20
    /// The largest request body the server reads (1 TB): a larger Content-Length is ignored.
    // Clamped: `1 << 40` is 0 where `Int` has 32 bits (watchOS on arm64_32).
    static let maximumBodyBytes = Int(clamping: Int64(1) << 40)

    init(fd: Int32) { self.fd = fd }

    enum ReadError: Error {
        case closed
        case malformed(String)
        case tooLarge
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw ReadError.closed }
        buffer.append(contentsOf: chunk[0..<count])
    }

    private func readLine() throws -> String {
        var searchStart = 0
        while true {
            if let index = buffer[searchStart...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(buffer[..<index])
                buffer.removeFirst(index + 1)
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            searchStart = buffer.count
            guard buffer.count < Self.maximumHeaderBytes else { throw ReadError.tooLarge }
            try fill()
        }
    }

    /// Reads and drops `count` bytes, keeping memory flat for huge uploads.
    private func discard(count: Int) throws {
        var remaining = count
        while remaining > 0 {
            if buffer.isEmpty { try fill() }
            let take = min(remaining, buffer.count)
            buffer.removeFirst(take)
            remaining -= take
        }
    }

    private func read(count: Int) throws -> Data {
        while buffer.count < count { try fill() }
        let data = Data(buffer[..<count])
        buffer.removeFirst(count)
        return data
    }

    /// Reads one request; throws `.closed` at a clean end of the connection.
    /// Bodies longer than `storeLimit` are read and dropped; the request records their length.
    func readRequest(storeLimit: Int, sendContinue: () throws -> Void) throws -> LocalHTTPServer.Request {
        var requestLine = try readLine()
        while requestLine.isEmpty { requestLine = try readLine() }  // tolerate stray CRLFs
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/") else { throw ReadError.malformed(requestLine) }
        var headers = HTTPHeadersBuilder()
        var total = 0
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            total += line.utf8.count
            guard total < Self.maximumHeaderBytes else { throw ReadError.tooLarge }
            guard let colon = line.firstIndex(of: ":") else { throw ReadError.malformed(line) }
            headers.add(String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        let built = headers.build()
        if built["Expect"]?.lowercased() == "100-continue" { try sendContinue() }
        var body = Data()
        var length = 0
        let chunked = built["Transfer-Encoding"]?.lowercased().contains("chunked") ?? false
        if chunked {
            while true {
                let sizeLine = try readLine()
                // A size must be plain hex digits: `Int(_:radix:)` also takes "-5" (found by
                // fuzzing: a negative count crashed `read(count:)`), and a huge one would
                // overflow the running length.
                let digits = sizeLine.split(separator: ";").first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
                guard !digits.isEmpty, digits.count <= 10, digits.allSatisfy(\.isHexDigit), let size = Int(digits, radix: 16) else {
                    throw ReadError.malformed("chunk size \(sizeLine)")
                }
                if size == 0 {
                    while try !readLine().isEmpty {}  // trailers
                    break
                }
                if length + size > storeLimit {
                    try discard(count: size)
                    body = Data()
                } else {
                    body += try read(count: size)
                }
                length += size
                _ = try readLine()
            }
        } else if let declared = built["Content-Length"].flatMap({ Int($0) }), declared > 0, declared <= Self.maximumBodyBytes {
            length = declared
            if declared > storeLimit { try discard(count: declared) } else { body = try read(count: declared) }
        }
        return LocalHTTPServer.Request(
            method: String(parts[0]), target: String(parts[1]), headers: built, body: body, wasChunked: chunked,
            bodyLength: length, bodyWasDiscarded: length > storeLimit
        )
    }

    /// Sends all of `data`; throws when the peer has gone.
    func send(_ data: Data) throws {
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = systemSend(fd, raw.baseAddress! + offset, raw.count - offset)
                guard sent > 0 else { throw ReadError.closed }
                offset += sent
            }
        }
    }

    /// Closes with a TCP reset instead of an orderly FIN.
    func reset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close()
    }

    func shutdownBoth() {
        isClosed.withLock { closed in
            if !closed { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    func close() {
        isClosed.withLock { closed in
            if !closed { systemClose(fd) }
            closed = true
        }
    }

    /// Whether the peer has closed its side (a readable socket with no data).
    func peerClosed() -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) <= 0
    }

    /// Waits up to `seconds` for the peer to close its side (or reset the connection).
    /// Returns false at the deadline, and at once when the peer sends bytes instead.
    func waitForPeerClose(seconds: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(max(0, seconds) * 1000))
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let (whole, attoseconds) = left.components
            let milliseconds = Int32(clamping: whole * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return ready < 0 }
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) <= 0
        }
    }
}

/// Collects header fields keeping duplicates joined by `, ` (RFC 9110 §5.3).
struct HTTPHeadersBuilder {
    private var fields: [(String, String)] = []
    mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }
    func build() -> Conveyor.HTTPHeaders {
        var headers = Conveyor.HTTPHeaders()
        for (name, value) in fields {
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        return headers
    }
}

// File-scope wrappers: inside ServerConnection the names `send` and `close` are its own methods.
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        // MSG_NOSIGNAL: a client that hung up must not kill the test process with SIGPIPE.
        return send(fd, pointer, count, Int32(MSG_NOSIGNAL))
    #else
        return send(fd, pointer, count, 0)
    #endif
}

private func systemClose(_ fd: Int32) { _ = close(fd) }

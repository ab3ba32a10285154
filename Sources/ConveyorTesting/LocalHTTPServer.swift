import Conveyor
import ConveyorLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An in-process HTTP/1.1 server on a random loopback port, for tests and the demo.
///
/// It serves httpbin-like built-in routes (see ``LocalHTTPServer`` `+BuiltInRoutes`), routes you
/// add with ``route(_:method:handler:)``, and faults on demand (`/fault/{name}`, see ``Fault``).
/// It records every request it received. Each connection gets its own thread; connections
/// are kept alive until the client closes them or the server stops.
///
/// ```swift
/// let server = try LocalHTTPServer.started()
/// defer { server.stop() }
/// server.route("/hello") { _ in .text("hi") }
/// let client = HTTPClient(baseURL: server.baseURL)
/// ```
public final class LocalHTTPServer: Sendable {
    // Sendable, checked by the compiler: all mutable state is in `state`, behind one Mutex;
    // `stopSignal` is a condition variable used only to wake sleepers when the server stops.

    /// A route's handler: returns the response for a request.
    public typealias Handler = @Sendable (Request) -> Response

    private struct State {
        var listenFD: Int32 = -1
        /// The accept thread's wake-up pipe: ``stop()`` writes a byte to `write`.
        var wakePipe: (read: Int32, write: Int32) = (-1, -1)
        var port = 0
        /// The Unix domain socket's path, for a server on one.
        var socketPath: String?
        var running = false
        var routes: [String: Handler] = [:]
        var connections: [Int32: ServerConnection] = [:]
        var received: [Request] = []
        var acceptThreadDone: DispatchSemaphore?
        var maximumStoredBodySize = 256 << 20
        var acceptedConnections = 0
        var closedConnections = 0
    }
    private let state = Lock(State())
    private let stopSignal = NSCondition()

    /// Creates a stopped server; call ``start()``.
    public init() {}

    /// Creates and starts a server.
    /// - Returns: The running server.
    /// - Throws: ``ServerError`` when no loopback port can be bound.
    public static func started() throws -> LocalHTTPServer {
        let server = LocalHTTPServer()
        try server.start()
        return server
    }

    /// Creates and starts a server on `port` of 127.0.0.1 — to try snippets against a fixed
    /// address (`swift run conveyor-demo --serve 8080`); 0 lets the kernel choose.
    /// - Parameter port: The port.
    /// - Returns: The running server.
    /// - Throws: ``ServerError`` when the port cannot be bound (in use, or privileged).
    public static func started(port: Int) throws -> LocalHTTPServer {
        let server = LocalHTTPServer()
        try server.start(port: port)
        return server
    }

    deinit { stop() }

    /// Why the server could not start.
    public struct ServerError: Error, CustomStringConvertible {
        /// What failed, with `errno`'s text.
        public let description: String
    }

    /// The port the server listens on (0 before ``start()``).
    public var port: Int { state.withLock { $0.port } }

    /// `http://127.0.0.1:<port>/`; for a server on a Unix domain socket, the socket's
    /// `http+unix` URL (`http+unix://%2Ftmp%2Fserver.sock/`).
    public var baseURL: URL {
        let (port, socketPath) = state.withLock { ($0.port, $0.socketPath) }
        if let socketPath, let url = HTTPClient.unixSocketURL(socketPath: socketPath) { return url }
        return URL(string: "http://127.0.0.1:\(port)/")!
    }

    /// The path of the Unix domain socket the server listens on; nil for a TCP server.
    public var unixSocketPath: String? { state.withLock { $0.socketPath } }

    /// Binds 127.0.0.1 on a port the kernel chooses and starts accepting connections.
    /// - Throws: ``ServerError``.
    public func start() throws {
        try start(port: 0)
    }

    /// Binds 127.0.0.1 on `port` (0: one the kernel chooses) and starts accepting connections.
    /// - Parameter port: The port, 0 to 65535.
    /// - Throws: ``ServerError`` when the port is out of range, in use or privileged.
    public func start(port requestedPort: Int) throws {
        guard (0...65535).contains(requestedPort) else { throw ServerError(description: "port \(requestedPort) is not 0...65535") }
        signal(SIGPIPE, SIG_IGN)
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ServerError(description: "socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(requestedPort).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        try Self.bindAndListen(fd, &address, "127.0.0.1:\(requestedPort)")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        try startAccepting(on: fd, port: Int(UInt16(bigEndian: address.sin_port)), socketPath: nil)
    }

    /// Creates and starts a server on a Unix domain socket at `path`: to test clients that reach
    /// a local daemon through a socket (``HTTPClient/Configuration/unixSocketPath`` or
    /// ``baseURL``, an `http+unix` URL).
    /// - Parameter path: Where the socket is created; nothing may exist there yet. Removed by ``stop()``.
    /// - Returns: The running server.
    /// - Throws: ``ServerError`` when the socket cannot be bound (the path exists, is too long
    ///   — 107 bytes at most on Linux — or its directory is not writable).
    public static func started(unixSocketPath path: String) throws -> LocalHTTPServer {
        let server = LocalHTTPServer()
        try server.start(unixSocketPath: path)
        return server
    }

    /// Binds a Unix domain socket at `path` and starts accepting connections.
    /// - Parameter path: Where the socket is created; nothing may exist there yet. Removed by ``stop()``.
    /// - Throws: ``ServerError`` when the socket cannot be bound.
    public func start(unixSocketPath path: String) throws {
        signal(SIGPIPE, SIG_IGN)
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else {
            throw ServerError(description: "the socket path \(path) is empty or longer than \(capacity - 1) bytes")
        }
        #if canImport(Glibc)
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ServerError(description: "socket: \(String(cString: strerror(errno)))") }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        try Self.bindAndListen(fd, &address, path)
        try startAccepting(on: fd, port: 0, socketPath: path)
    }

    /// Starts the accept thread on the bound, listening socket `fd`.
    /// Binds `fd` to `address` (a `sockaddr_in` or `sockaddr_un`) and listens; on failure closes
    /// it and throws, naming `name`. The one bind of both kinds of server.
    private static func bindAndListen<Address>(_ fd: Int32, _ address: inout Address, _ name: String) throws {
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<Address>.size)) }
        }
        guard bound == 0, listen(fd, 1024) == 0 else {
            let message = String(cString: strerror(errno))
            _ = close(fd)
            throw ServerError(description: "bind/listen on \(name): \(message)")
        }
    }

    private func startAccepting(on fd: Int32, port: Int, socketPath: String?) throws {
        // The accept thread polls the listening socket and a pipe that stop() writes to: the one
        // wake-up that works everywhere (shutdown() of a listening socket wakes accept() on
        // Linux, but fails with ENOTCONN on Darwin). Non-blocking, so that a connection reset
        // between poll and accept cannot leave the thread blocked in accept().
        var wake: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else {
            let message = String(cString: strerror(errno))
            _ = close(fd)
            if let socketPath { _ = unlink(socketPath) }
            throw ServerError(description: "pipe: \(message)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let wakePipe = (read: wake[0], write: wake[1])
        let done = DispatchSemaphore(value: 0)
        state.withLock {
            $0.listenFD = fd
            $0.wakePipe = wakePipe
            $0.port = port
            $0.socketPath = socketPath
            $0.running = true
            $0.acceptThreadDone = done
        }
        let thread = Thread { [self] in
            acceptLoop(fd, wakeFD: wakePipe.read)
            done.signal()
        }
        thread.name = "LocalHTTPServer.accept"
        thread.start()
    }

    /// Stops accepting, closes every connection and wakes stalled handlers. Idempotent.
    public func stop() {
        let (fd, wakePipe, connections, done, socketPath) = state.withLock {
            state -> (Int32, (read: Int32, write: Int32), [ServerConnection], DispatchSemaphore?, String?) in
            guard state.running else { return (-1, (-1, -1), [], nil, nil) }
            state.running = false
            defer { state.connections = [:] }
            return (state.listenFD, state.wakePipe, Array(state.connections.values), state.acceptThreadDone, state.socketPath)
        }
        guard fd >= 0 else { return }
        stopSignal.lock()
        stopSignal.broadcast()
        stopSignal.unlock()
        // Wake the accept thread through its pipe, wait for it to leave, and only then close
        // the descriptors: closed earlier, the listening socket's number could be reused for
        // another server's (tests run servers in parallel), and an accept thread between two
        // calls would take that server's next connection and close it — its client saw "Empty
        // reply from server".
        Self.wake(wakePipe.write)
        connections.forEach { $0.shutdownBoth() }
        done?.wait()
        _ = close(fd)
        _ = close(wakePipe.read)
        _ = close(wakePipe.write)
        // A socket file outlives its descriptor; a later server could not bind the path.
        if let socketPath { _ = unlink(socketPath) }
    }

    /// Request bodies longer than this are read and dropped rather than kept (their length is
    /// still recorded), so uploads of gigabytes keep the server's memory flat. Default 256 MB.
    public var maximumStoredBodySize: Int {
        get { state.withLock { $0.maximumStoredBodySize } }
        set { state.withLock { $0.maximumStoredBodySize = newValue } }
    }

    /// Whether the server is accepting connections.
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Adds or replaces a route. Routes added here take precedence over the built-ins.
    /// - Parameters:
    ///   - path: The exact path to match (query ignored), for example `"/users/1"`.
    ///   - method: The method to match; nil matches any.
    ///   - handler: Produces the response.
    public func route(_ path: String, method: String? = nil, handler: @escaping Handler) {
        state.withLock { $0.routes[Self.routeKey(method, path)] = handler }
    }

    private static func routeKey(_ method: String?, _ path: String) -> String { "\(method?.uppercased() ?? "*") \(path)" }

    /// Every request received so far, in arrival order.
    public var receivedRequests: [Request] { state.withLock { $0.received } }

    /// How many requests arrived for `path` (query ignored).
    /// - Parameter path: The path.
    /// - Returns: The count.
    public func requestCount(path: String) -> Int { state.withLock { $0.received.filter { $0.path == path }.count } }

    /// How many TCP connections the server has accepted since it started: tests of
    /// connection reuse and per-host connection limits read it.
    public var acceptedConnectionCount: Int { state.withLock { $0.acceptedConnections } }

    /// How many of the accepted connections have ended (closed by the client, by the server
    /// after `Connection: close`, or on an error): a test that a pool reuses its connections
    /// checks that none ended while it was busy.
    public var closedConnectionCount: Int { state.withLock { $0.closedConnections } }

    /// Forgets the recorded requests.
    public func clearReceivedRequests() { state.withLock { $0.received.removeAll() } }

    /// Sleeps up to `seconds`, waking early when the server stops. Returns whether it still runs.
    func wait(_ seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        stopSignal.lock()
        defer { stopSignal.unlock() }
        while isRunning, Date() < deadline {
            _ = stopSignal.wait(until: deadline)
        }
        return isRunning
    }

    // MARK: - Serving

    /// Writes the byte to the wake-up pipe that ends ``acceptLoop(_:wakeFD:)``.
    private static func wake(_ fd: Int32) {
        var byte: UInt8 = 1
        #if canImport(Glibc)
            while Glibc.write(fd, &byte, 1) < 0 && errno == EINTR {}
        #else
            while Darwin.write(fd, &byte, 1) < 0 && errno == EINTR {}
        #endif
    }

    /// Accepts connections until ``stop()`` writes to the wake-up pipe `wakeFD`.
    private func acceptLoop(_ listenFD: Int32, wakeFD: Int32) {
        while true {
            var polled = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            if poll(&polled, 2, -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if polled[1].revents != 0 { return }  // stop()
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                // Gone before it was accepted, or taken meanwhile: poll again.
                if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED { continue }
                return
            }
            // Darwin's accepted sockets inherit O_NONBLOCK from the listening socket (Linux's do
            // not); connections are served with blocking calls.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            var yes: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            let connection = ServerConnection(fd: fd)
            let accepted = state.withLock { state -> Bool in
                guard state.running else { return false }
                state.connections[fd] = connection
                state.acceptedConnections += 1
                return true
            }
            guard accepted else {
                connection.close()
                return
            }
            let thread = Thread { [self] in
                serve(connection)
                state.withLock { state in
                    _ = state.connections.removeValue(forKey: fd)
                    state.closedConnections += 1
                }
                connection.close()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    private func serve(_ connection: ServerConnection) {
        while isRunning {
            let request: Request
            do {
                request = try connection.readRequest(storeLimit: maximumStoredBodySize) {
                    try connection.send(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                }
            } catch ServerConnection.ReadError.closed {
                return
            } catch {
                try? connection.send(Data("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
                return
            }
            state.withLock { $0.received.append(request) }
            let response = respond(to: request)
            let closeAfter = request.headers["Connection"]?.lowercased() == "close"
            do {
                guard try write(response, for: request, on: connection, closing: closeAfter) else { return }
            } catch {
                return
            }
            if closeAfter { return }
        }
    }

    private func respond(to request: Request) -> Response {
        let handler = state.withLock {
            $0.routes[Self.routeKey(request.method, request.path)] ?? $0.routes[Self.routeKey(nil, request.path)]
        }
        return handler?(request) ?? builtInResponse(to: request)
    }

    /// Writes a response; returns false when the connection must not be reused.
    private func write(_ response: Response, for request: Request, on connection: ServerConnection, closing: Bool) throws -> Bool {
        var headers = response.headers
        headers["Date"] = headers["Date"] ?? Self.httpDate(Date())
        headers["Server"] = headers["Server"] ?? "ConveyorTesting/LocalHTTPServer"
        if closing { headers["Connection"] = "close" }
        func head() -> Data {
            var text = "HTTP/1.1 \(response.status) \(Self.reasonPhrase(response.status))\r\n"
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            return Data((text + "\r\n").utf8)
        }
        switch response.body {
        case .data(let body):
            let sendsBody = request.method != "HEAD" && response.status != 204 && response.status != 304
            if headers["Content-Length"] == nil, response.status != 204, response.status != 304 {
                headers["Content-Length"] = String(body.count)
            }
            try connection.send(head() + (sendsBody ? body : Data()))
            return true
        case .stream(let chunked, let produce):
            if chunked { headers["Transfer-Encoding"] = "chunked" }
            let delimited = chunked || headers["Content-Length"] != nil
            if !delimited { headers["Connection"] = "close" }
            try connection.send(head())
            try produce(ResponseWriter(connection: connection, chunked: chunked, server: self))
            if chunked { try connection.send(Data("0\r\n\r\n".utf8)) }
            return delimited
        case .fault(let fault):
            try inject(fault, request: request, on: connection)
            return false
        case .raw(let bytes):
            try connection.send(bytes)
            connection.shutdownBoth()
            return false
        }
    }

    private func inject(_ fault: Fault, request: Request, on connection: ServerConnection) throws {
        let body = Data(repeating: UInt8(ascii: "x"), count: 1000)
        func head(length: Int) -> Data {
            Data("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(length)\r\n\r\n".utf8)
        }
        switch fault {
        case .closeMidBody:
            try connection.send(head(length: body.count) + body.prefix(500))
            connection.shutdownBoth()
        case .stallAfterHeaders:
            try connection.send(head(length: body.count))
            // Hold the connection open, silent, until the client gives up or the server stops.
            while isRunning, !connection.peerClosed() { _ = wait(0.02) }
        case .reset:
            connection.reset()
        case .malformedStatusLine:
            try connection.send(Data("HTPT/1.1 two hundred\r\nContent-Length: 0\r\n\r\n".utf8))
            connection.shutdownBoth()
        case .lyingContentLength:
            try connection.send(head(length: 1000) + body.prefix(10))
            connection.shutdownBoth()
        case .closeBeforeHeaders:
            connection.shutdownBoth()
        case .endlessContinue:
            while isRunning, !connection.peerClosed() {
                try connection.send(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                _ = wait(0.01)
            }
        case .rangeStartsElsewhere, .rangeWithoutContentRange, .rangeOtherTotal, .rangeOtherValidator, .rangeWithoutValidator,
            .rangeEndsShort:
            try connection.send(Self.rangeFaultAnswer(fault, request: request))
            connection.shutdownBoth()
        }
    }

    /// The body the `range-…` faults serve: 1,200 bytes of `abc…z` repeated.
    public static let rangeFaultBody = Data((0..<1200).map { UInt8(ascii: "a") + UInt8($0 % 26) })
    /// The `ETag` the `range-…` faults serve their body under.
    public static let rangeFaultETag = "\"range-fault\""

    /// The bytes a `range-…` fault sends: half of the body without `Range`, a 206 that does not
    /// continue it with one (see ``Fault/rangeStartsElsewhere``).
    private static func rangeFaultAnswer(_ fault: Fault, request: Request) -> Data {
        let body = rangeFaultBody
        let range = request.headers["Range"].flatMap { $0.hasPrefix("bytes=") ? $0.dropFirst(6).split(separator: "-").first : nil }
        guard let first = range.flatMap({ Int($0) }), (0..<body.count).contains(first) else {
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nETag: \(rangeFaultETag)\r\nAccept-Ranges: bytes\r\n"
                + "Content-Length: \(body.count)\r\n\r\n"
            return Data(head.utf8) + body.prefix(body.count / 2)
        }
        var start = first
        var etag: String? = rangeFaultETag
        var contentRange: String?
        switch fault {
        case .rangeStartsElsewhere:
            start = max(0, first - 100)
            contentRange = "bytes \(start)-\(body.count - 1)/\(body.count)"
        case .rangeOtherTotal: contentRange = "bytes \(first)-\(body.count - 1)/\(body.count * 2)"
        case .rangeOtherValidator:
            etag = "\"another\""
            contentRange = "bytes \(first)-\(body.count - 1)/\(body.count)"
        case .rangeWithoutValidator:
            etag = nil
            contentRange = "bytes \(first)-\(body.count - 1)/\(body.count)"
        case .rangeEndsShort: contentRange = "bytes \(first)-\(body.count - 2)/\(body.count)"
        default: contentRange = nil
        }
        let part = fault == .rangeEndsShort ? body[start..<(body.count - 1)] : body[start...]
        let head =
            "HTTP/1.1 206 Partial Content\r\nContent-Type: application/octet-stream\r\n" + (etag.map { "ETag: \($0)\r\n" } ?? "")
            + (contentRange.map { "Content-Range: \($0)\r\n" } ?? "") + "Content-Length: \(part.count)\r\n\r\n"
        return Data(head.utf8) + part
    }

    /// The reason phrase for a status code. A table rather than `localizedString(forStatusCode:)
    /// .capitalized`: `capitalized` is not thread-safe on Linux (see Conveyor's URLRequest+Headers).
    static func reasonPhrase(_ status: Int) -> String {
        let phrases = [
            100: "Continue", 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 205: "Reset Content",
            206: "Partial Content", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
            307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 407: "Proxy Authentication Required", 408: "Request Timeout",
            409: "Conflict", 410: "Gone", 412: "Precondition Failed", 413: "Content Too Large", 416: "Range Not Satisfiable",
            418: "I'm a teapot", 429: "Too Many Requests", 500: "Internal Server Error", 501: "Not Implemented",
            502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
        ]
        return phrases[status] ?? "Status \(status)"
    }

    /// The IMF-fixdate for `date` (RFC 9110 §5.6.7), cached per second: building a
    /// DateFormatter per response cost more than the rest of a small response together.
    static func httpDate(_ date: Date) -> String {
        let second = Int(date.timeIntervalSince1970)
        return dateCache.withLock { cache in
            if cache.second == second { return cache.text }
            let text = date.formatted(
                Date.VerbatimFormatStyle(
                    format:
                        "\(weekday: .abbreviated), \(day: .twoDigits) \(month: .abbreviated) \(year: .padded(4)) \(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits):\(second: .twoDigits) GMT",
                    locale: Locale(identifier: "en_US_POSIX"), timeZone: TimeZone(identifier: "GMT")!,
                    calendar: Calendar(identifier: .gregorian)
                )
            )
            cache = (second, text)
            return text
        }
    }
    private static let dateCache = Lock<(second: Int, text: String)>((-1, ""))
}

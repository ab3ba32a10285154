import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation

/// Runs `body` with a fresh LocalHTTPServer and a client pointed at it; stops the server after.
@discardableResult
func withServer<T>(
    configuration: HTTPClient.Configuration = .default,
    _ body: (LocalHTTPServer, HTTPClient) async throws -> T
) async throws -> T {
    let server = try LocalHTTPServer.started()
    defer { server.stop() }
    let client = HTTPClient(baseURL: server.baseURL, configuration: configuration)
    return try await body(server, client)
}

/// A client of `server` on `transport`, with no cache and no reachability monitoring (tests
/// that need either set it up themselves).
func testClient(
    _ server: LocalHTTPServer, _ transport: HTTPClient.TransportKind, configure: (inout HTTPClient.Configuration) -> Void = { _ in }
) -> HTTPClient {
    testClient(baseURL: server.baseURL, transport, configure: configure)
}

/// The same client for a base URL no `LocalHTTPServer` serves (a refused port, an unroutable address).
func testClient(
    baseURL: URL, _ transport: HTTPClient.TransportKind, configure: (inout HTTPClient.Configuration) -> Void = { _ in }
) -> HTTPClient {
    var configuration = HTTPClient.Configuration.default
    configuration.transport = transport
    configuration.cache = nil
    configuration.monitorsReachability = false
    configure(&configuration)
    return HTTPClient(baseURL: baseURL, configuration: configuration)
}

extension HTTPClient.Configuration {
    /// The defaults with another idle timeout.
    static func idleTimeout(_ seconds: TimeInterval) -> Self {
        var configuration = Self.default
        configuration.idleTimeout = seconds
        return configuration
    }
}

extension Data {
    /// The body parsed as a JSON object.
    var jsonObject: [String: Any] { (try? JSONSerialization.jsonObject(with: self)) as? [String: Any] ?? [:] }
}

extension String {
    /// The string without one trailing `suffix`.
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

/// A route that answers only once released (or after its fallback), and tells when a request arrived:
/// it keeps an operation "in flight" for exactly as long as a test needs, whatever the load.
final class HeldRoute: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let arrivals = AsyncStream.makeStream(of: Void.self)
    private let answers = Answers()

    /// Installs the route at `path` on `server`; it answers `response`, or `body` as text, once
    /// released or after `fallback` seconds. The fallback only ends a test that never releases:
    /// 60 s, because a full run on a loaded machine stalled its tests for more than 10 s (the
    /// held request then answered on its own, before the cancel or pause under test).
    init(
        _ server: LocalHTTPServer, path: String = "/hold", body: String = "late", response: LocalHTTPServer.Response? = nil,
        fallback: TimeInterval = 60
    ) {
        let gate = gate
        let arrivals = arrivals
        let answers = answers
        server.route(path) { _ in
            arrivals.continuation.yield()
            _ = gate.wait(timeout: .now() + fallback)
            answers.count.withLock { $0 += 1 }
            return response ?? .text(body)
        }
    }

    /// How many held requests have been let go (released or fallen back) and answered: 0 means
    /// whatever happened to a held request so far happened before the server answered it.
    var answeredCount: Int { answers.count.withLock { $0 } }

    /// The count, in a class the route's closure can hold (a Lock cannot be copied into it).
    private final class Answers: Sendable {
        let count = Lock(0)
    }

    /// Returns once a request has reached the route.
    func arrived() async {
        for await _ in arrivals.stream { return }
    }

    /// Lets one held request answer.
    func release() { gate.signal() }

    deinit { gate.signal() }
}

/// The first element of `stream`, or nil when `seconds` pass first. The limit is no promise
/// under test: it only turns an event that never comes into a failure instead of a hang.
func first<Element: Sendable>(of stream: AsyncStream<Element>, failingAfter seconds: Int) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

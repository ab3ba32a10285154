import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Canned responses for the cases a socket cannot show (a DNS failure, "not connected to
/// the internet", a specific `URLError`), served through URLSession's own protocol
/// mechanism, so the whole of Conveyor above the session still runs.
///
/// Prefer ``LocalHTTPServer`` — real sockets — for everything else.
///
/// ```swift
/// StubURLProtocol.stub(url: URL(string: "https://api.example.com/offline")!, with: .failure(URLError(.notConnectedToInternet)))
/// var configuration = HTTPClient.Configuration.default
/// configuration.sessionConfiguration = StubURLProtocol.sessionConfiguration()
/// let client = HTTPClient(baseURL: URL(string: "https://api.example.com/")!, configuration: configuration)
/// ```
open class StubURLProtocol: URLProtocol {
    // Not Sendable (URLProtocol is explicitly not); instances hold no state of their own and
    // the stubs live in `registry`, behind one Mutex.

    /// What a stubbed request gets.
    public enum Stub: Sendable {
        /// A response head and body.
        case response(status: Int, headers: [String: String] = [:], body: Data = Data())
        /// A failure, as URLSession would report it.
        case failure(URLError)
    }

    private static let registry = Lock<[(matches: @Sendable (URLRequest) -> Bool, stub: Stub)]>([])
    private static let served = Lock<[URLRequest]>([])

    /// Answers requests for exactly `url` (query included) with `stub`; newer stubs win.
    /// - Parameters:
    ///   - url: The URL to match.
    ///   - stub: The answer.
    public static func stub(url: URL, with stub: Stub) {
        self.stub(matching: { $0.url == url }, with: stub)
    }

    /// Answers requests `matches` accepts with `stub`; newer stubs win.
    /// - Parameters:
    ///   - matches: Decides whether a request is stubbed.
    ///   - stub: The answer.
    public static func stub(matching matches: @escaping @Sendable (URLRequest) -> Bool, with stub: Stub) {
        registry.withLock { $0.insert((matches, stub), at: 0) }
    }

    /// Removes every stub and forgets the requests served.
    public static func removeAllStubs() {
        registry.withLock { $0.removeAll() }
        served.withLock { $0.removeAll() }
    }

    /// The requests answered so far, in order.
    public static var servedRequests: [URLRequest] { served.withLock { $0 } }

    /// An ephemeral session configuration whose only protocol is this class, for
    /// ``HTTPClient/Configuration/sessionConfiguration``.
    /// - Returns: The configuration.
    public static func sessionConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [self]
        return configuration
    }

    private static func stub(for request: URLRequest) -> Stub? {
        registry.withLock { stubs in stubs.first { $0.matches(request) }?.stub }
    }

    /// Whether a stub answers `request`.
    /// - Parameter request: The request.
    /// - Returns: true when a stub matches.
    open override class func canInit(with request: URLRequest) -> Bool { stub(for: request) != nil }

    /// The request itself.
    /// - Parameter request: The request.
    /// - Returns: `request`.
    open override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    /// Delivers the stub to the loading system.
    open override func startLoading() {
        Self.served.withLock { $0.append(request) }
        guard let client, let url = request.url else { return }
        switch Self.stub(for: request) {
        case .response(let status, let headers, let body)?:
            guard let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers) else {
                client.urlProtocol(self, didFailWithError: URLError(.badServerResponse))
                return
            }
            client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            if !body.isEmpty { client.urlProtocol(self, didLoad: body) }
            client.urlProtocolDidFinishLoading(self)
        case .failure(let error)?:
            client.urlProtocol(self, didFailWithError: error)
        case nil:
            client.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
        }
    }

    /// Nothing to stop: a stub is delivered at once.
    open override func stopLoading() {}
}

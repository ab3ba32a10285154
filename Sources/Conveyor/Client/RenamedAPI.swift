import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Names Conveyor used before 0.2, kept as unavailable declarations so that the compiler says what
// to write instead ("'timeout' has been renamed to 'idleTimeout'", with a fix-it) rather than
// "has no member". They cannot be called; each names its replacement.

extension HTTPClient.Configuration {
    /// Renamed: the idle timeout is ``idleTimeout``.
    @available(*, unavailable, renamed: "idleTimeout")
    public var timeout: TimeInterval {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// Moved: TLS settings live in ``tls`` (``TLSConfiguration/allowsInvalidCertificates``).
    @available(*, unavailable, message: "use tls.allowsInvalidCertificates")
    public var allowsInvalidCertificates: Bool {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }
}

extension HTTPClient {
    /// Renamed: a span of seconds is a `timeout` (``drain(timeout:queued:completionGrace:)``).
    /// - Parameters:
    ///   - deadline: Seconds from now.
    ///   - queued: What happens to operations not started yet.
    /// - Returns: Whether every running operation finished in time.
    @available(*, unavailable, renamed: "drain(timeout:queued:)")
    public func drain(deadline: TimeInterval, queued: QueuedOperationsPolicy = .cancel) async -> Bool { fatalError("unavailable") }

    /// Renamed: the response side says `responseSerializer:` (``response(for:responseSerializer:)``).
    /// - Parameters:
    ///   - request: The request.
    ///   - serializer: The response serializer.
    /// - Returns: The response.
    @available(*, unavailable, renamed: "response(for:responseSerializer:)")
    public func response<Serializer: ResponseSerializer>(
        for request: URLRequest, serializer: Serializer
    ) async throws -> HTTPResponse<Serializer.Output> where Serializer.Output: Sendable { fatalError("unavailable") }

    /// Renamed: the request side says `requestSerializer:`
    /// (``request(method:path:parameters:headers:requestSerializer:)``).
    /// - Parameters:
    ///   - method: The method.
    ///   - path: The path.
    ///   - parameters: The parameters.
    ///   - headers: The headers.
    ///   - serializer: The request serializer.
    /// - Returns: The request.
    @available(*, unavailable, renamed: "request(method:path:parameters:headers:requestSerializer:)")
    public func request(
        method: HTTPMethod, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], serializer: any RequestSerializer
    ) throws -> URLRequest { fatalError("unavailable") }

    /// Renamed: an `Encodable` value is a `body:` everywhere
    /// (``request(method:path:body:headers:requestSerializer:)``).
    /// - Parameters:
    ///   - method: The method.
    ///   - path: The path.
    ///   - encodable: The value.
    ///   - headers: The headers.
    ///   - requestSerializer: The request serializer.
    /// - Returns: The request.
    @available(*, unavailable, renamed: "request(method:path:body:headers:requestSerializer:)")
    public func request<Value: Encodable>(
        method: HTTPMethod, path: String, encodable: Value, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil
    ) throws -> URLRequest { fatalError("unavailable") }

    /// Renamed: the request side says `requestSerializer:`.
    /// - Parameters:
    ///   - path: The path.
    ///   - parameters: The parameters.
    ///   - serializer: The request serializer.
    /// - Returns: The body.
    @available(*, unavailable, renamed: "get(_:parameters:requestSerializer:)")
    public func get(_ path: String, parameters: Parameters? = nil, serializer: any RequestSerializer) async throws -> Data {
        fatalError("unavailable")
    }

    /// Renamed: the request side says `requestSerializer:`.
    /// - Parameters:
    ///   - path: The path.
    ///   - parameters: The parameters.
    ///   - serializer: The request serializer.
    /// - Returns: The body.
    @available(*, unavailable, renamed: "post(_:parameters:requestSerializer:)")
    public func post(_ path: String, parameters: Parameters? = nil, serializer: any RequestSerializer) async throws -> Data {
        fatalError("unavailable")
    }
}

extension GracefulShutdown {
    /// Renamed: a span of seconds is a `timeout`
    /// (``install(signals:clients:timeout:exit:)``).
    /// - Parameters:
    ///   - signals: The signals.
    ///   - clients: The clients to drain.
    ///   - deadline: Seconds they get.
    @available(*, unavailable, renamed: "install(signals:clients:timeout:exit:)")
    public static func install(signals: [Int32] = [SIGTERM, SIGINT], clients: [HTTPClient], deadline: TimeInterval) {
        fatalError("unavailable")
    }
}

extension TransferMetrics {
    /// Renamed: offsets are named for the moment they end at (``lastByte``).
    @available(*, unavailable, renamed: "lastByte")
    public var total: TimeInterval? { fatalError("unavailable") }
}

extension NetworkLogger {
    /// Replaced by ``expectedFailures`` (failures log at `.warn` by default).
    @available(*, unavailable, message: "use expectedFailures")
    public var routineFailuresAreWarnings: Bool {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }
}

extension ConveyorError {
    /// Alamofire's name for ``statusCode``.
    @available(*, unavailable, renamed: "statusCode")
    public var responseCode: Int? { fatalError("unavailable") }
}

extension ImageDownloader {
    /// Renamed: the idle timeout is `idleTimeout:`
    /// (``init(imageCache:httpCache:maximumConcurrentDownloads:callbackQueue:idleTimeout:)``).
    /// - Parameters:
    ///   - imageCache: The decoded-image cache.
    ///   - httpCache: The HTTP cache.
    ///   - maximumConcurrentDownloads: Downloads at once.
    ///   - callbackQueue: Where completions run.
    ///   - timeout: The idle timeout.
    @available(*, unavailable, renamed: "init(imageCache:httpCache:maximumConcurrentDownloads:callbackQueue:idleTimeout:)")
    public convenience init(
        imageCache: ImageCache? = .shared, httpCache: HTTPCache? = .shared, maximumConcurrentDownloads: Int = 4,
        callbackQueue: DispatchQueue = .conveyorDefaultCallbackQueue, timeout: TimeInterval
    ) {
        fatalError("unavailable")
    }
}

/// Renamed ``EncodedImage`` in 0.4, so that `Image` is SwiftUI's in a file importing both
/// modules (an unavailable name does not make SwiftUI's ambiguous).
@available(*, unavailable, renamed: "EncodedImage")
public typealias Image = EncodedImage

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Changes every request a client sends, just before it goes out: adds a request id or a
/// `traceparent` from a task-local, signs it, picks a mirror.
///
/// Install adapters on a client (``HTTPClient/Configuration/requestAdapters``); they run, in
/// order, for every attempt of every operation the client builds or enqueues — the first
/// request, each redirect's target, each retry and resume, each replay after a credential
/// refresh, and each delivery of the client's outbox — after the ``Authenticator`` stamped its
/// credential and before anything is sent. Each run starts from the request as the operation
/// would send it without adapters (``HTTPRequestOperation/currentRequest``), so an adapter that
/// appends a header does not append it twice on a retry.
///
/// Which to use when:
/// - a credential that expires and is refreshed: an ``Authenticator``;
/// - a header or signature computed per attempt, possibly asynchronously: a `RequestAdapter`;
/// - a fixed change to how requests are built (a path prefix, fixed headers): override
///   ``HTTPClient/request(method:path:parameters:headers:requestSerializer:)`` in the client's
///   subclass, as with AFNetworking — it reaches the outbox too.
///
/// An adapter runs for requests to any origin, redirects included: one that adds a secret
/// checks ``RequestAdapterContext/isCredentialOrigin`` first (values in `Authorization`,
/// `Cookie`, `Proxy-Authorization` and the logger's secret header names are masked in every
/// text Conveyor emits, as for every credential Conveyor sends). An adapter that throws fails
/// the operation with ``ConveyorError/requestAdaptationFailed(underlying:)`` before anything is
/// sent (the retry policy is not asked: nothing reached the server). The time an adapter takes
/// counts against the operation's idle and resource timeouts, so one that never returns ends
/// in ``ConveyorError/timedOut(_:after:)``; its late answer is dropped, as is the answer for an
/// operation cancelled or paused meanwhile.
public protocol RequestAdapter: Sendable {
    /// Returns the request to send instead of `request`.
    /// - Parameters:
    ///   - request: The attempt about to be sent, with the earlier adapters' changes.
    ///   - context: The operation, the attempt and whether the request goes to one of the
    ///     client's credential origins.
    /// - Returns: The request to send.
    /// - Throws: Any error; the operation fails with ``ConveyorError/requestAdaptationFailed(underlying:)``.
    func adapt(_ request: URLRequest, context: RequestAdapterContext) async throws -> URLRequest
}

/// What a ``RequestAdapter`` knows about the attempt it adapts.
public struct RequestAdapterContext: Sendable {
    /// The operation sending the request.
    public let operation: HTTPRequestOperation
    /// The operation's attempt, from 1: each redirect, retry, resume and replay is one more.
    public let attempt: Int
    /// Whether the request goes to an origin that receives the client's credentials (the base
    /// URL's and ``HTTPClient/Configuration/credentialOrigins``): false for other origins, and
    /// when the client is gone.
    public let isCredentialOrigin: Bool
}

/// A ``RequestAdapter`` made from a closure.
///
/// ```swift
/// configuration.requestAdapters = [
///     ClosureRequestAdapter { request, _ in
///         var request = request
///         request.setHeader(UUID().uuidString, for: "X-Request-ID")
///         return request
///     }
/// ]
/// ```
public struct ClosureRequestAdapter: RequestAdapter {
    /// The closure's type: the request and its context in, the request to send out.
    public typealias Adapt = @Sendable (URLRequest, RequestAdapterContext) async throws -> URLRequest
    private let body: Adapt

    /// Creates an adapter that runs `adapt`.
    /// - Parameter adapt: Returns the request to send; may throw to fail the operation.
    public init(_ adapt: @escaping Adapt) {
        body = adapt
    }

    /// Runs the closure.
    /// - Parameters:
    ///   - request: The attempt about to be sent.
    ///   - context: The operation, the attempt and its origin.
    /// - Returns: What the closure returns.
    /// - Throws: What the closure throws.
    public func adapt(_ request: URLRequest, context: RequestAdapterContext) async throws -> URLRequest {
        try await body(request, context)
    }
}

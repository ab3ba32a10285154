import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An operation whose response is parsed as JSON (AFNetworking's `AFJSONRequestOperation`).
///
/// Accepts `application/json`, `text/json`, `text/javascript` and `+json` types; chosen by a
/// client for requests whose `Accept` lists one of them or whose path ends in `.json`.
open class JSONRequestOperation: HTTPRequestOperation, @unchecked Sendable {
    // @unchecked Sendable: adds no state; the base class keeps everything behind its Mutex.

    /// Creates the operation with a ``JSONResponseSerializer``.
    /// - Parameter request: The request.
    public required init(request: URLRequest) {
        super.init(request: request)
        responseSerializer = JSONResponseSerializer()
    }

    /// The JSON types.
    open override class var processableContentTypes: Set<String> { JSONResponseSerializer.defaultContentTypes }
    /// `json`.
    open override class var processablePathExtensions: Set<String> { ["json"] }

    /// The parsed JSON (`[String: Any]`, `[Any]`, a fragment, or `NSNull` for an empty body);
    /// nil until the operation succeeded.
    public var responseJSON: Any? { responseObject }
}

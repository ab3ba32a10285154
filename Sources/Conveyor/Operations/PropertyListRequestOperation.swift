import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An operation whose response is a property list (AFNetworking's `AFPropertyListRequestOperation`).
open class PropertyListRequestOperation: HTTPRequestOperation, @unchecked Sendable {
    // @unchecked Sendable: adds no state; the base class keeps everything behind its Mutex.

    /// Creates the operation with a ``PropertyListResponseSerializer``.
    /// - Parameter request: The request.
    public required init(request: URLRequest) {
        super.init(request: request)
        responseSerializer = PropertyListResponseSerializer()
    }

    /// `application/x-plist` and friends.
    open override class var processableContentTypes: Set<String> { PropertyListResponseSerializer.defaultContentTypes }
    /// `plist`.
    open override class var processablePathExtensions: Set<String> { ["plist"] }

    /// The parsed property list; nil until the operation succeeded.
    public var responsePropertyList: Any? { responseObject }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(FoundationXML)
    import FoundationXML
#endif

/// An operation whose response is XML (AFNetworking's `AFXMLRequestOperation`): parsed into an
/// ``XMLTree``, with an `XMLParser` available for your own delegate.
open class XMLRequestOperation: HTTPRequestOperation, @unchecked Sendable {
    // @unchecked Sendable: adds no state; the base class keeps everything behind its Mutex.

    /// Creates the operation with an ``XMLTreeResponseSerializer``.
    /// - Parameter request: The request.
    public required init(request: URLRequest) {
        super.init(request: request)
        responseSerializer = XMLTreeResponseSerializer()
    }

    /// `application/xml`, `text/xml`, `+xml`.
    open override class var processableContentTypes: Set<String> { xmlContentTypes }
    /// `xml`.
    open override class var processablePathExtensions: Set<String> { ["xml"] }

    /// The parsed document's root element; nil until the operation succeeded.
    public var responseXMLTree: XMLTree? { responseObject as? XMLTree }

    /// A new `XMLParser` over the response body, for a delegate of your own; nil before a body arrived.
    public var responseXMLParser: XMLParser? { responseData.map { XMLParser(data: $0) } }
}

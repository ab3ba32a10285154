import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Tries several serializers in order: the first whose content types accept the response and
/// which succeeds produces the value (AFNetworking's `AFCompoundResponseSerializer`).
public struct CompoundResponseSerializer: ResponseSerializer {
    /// The serializers, in the order they are tried.
    public let serializers: [any ResponseSerializer]

    /// Creates the serializer.
    /// - Parameter serializers: Tried in order.
    public init(_ serializers: [any ResponseSerializer]) { self.serializers = serializers }

    /// The union of the serializers' types, or nil (any) when one of them accepts any.
    public var acceptableContentTypes: Set<String>? {
        var union = Set<String>()
        for serializer in serializers {
            guard let types = serializer.acceptableContentTypes else { return nil }
            union.formUnion(types)
        }
        return union
    }

    /// The first serializer's empty value that exists.
    public func emptyResponseValue(request: URLRequest, response: HTTPResponseHead) throws -> Any {
        var lastError: any Error = ResponseSerializationError.emptyBody(status: response.statusCode)
        for serializer in serializers {
            do { return try serializer.emptyResponseValue(request: request, response: response) } catch { lastError = error }
        }
        throw lastError
    }

    /// The first value a matching serializer produces.
    /// - Throws: The last serializer's error when none succeeds.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> Any {
        var lastError: any Error = ResponseSerializationError.emptyBody(status: response.statusCode)
        for serializer in serializers {
            if let types = serializer.acceptableContentTypes, !ContentTypes.matches(response.mimeType, types) { continue }
            do { return try serializer.serialize(request: request, response: response, data: data) } catch { lastError = error }
        }
        throw lastError
    }
}

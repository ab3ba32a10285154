import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Turns a validated response body into a value.
///
/// Validation is shared by every serializer and runs in the operation, in this order:
/// 1. the status code must be in the operation's ``HTTPRequestOperation/acceptableStatusCodes``;
/// 2. a body-less answer (204, 205, or any response to HEAD, with an empty body) produces
///    ``emptyResponseValue(request:response:)`` without parsing;
/// 3. a non-empty body's MIME type must match the operation's
///    ``HTTPRequestOperation/acceptableContentTypes``, which default to this serializer's
///    ``acceptableContentTypes`` — per operation, never global;
/// 4. ``serialize(request:response:data:)`` runs off the callback queue.
///
/// Presets: `.data`, `.string`, `.json`, `.decodable(T.self)`, `.propertyList`, `.xmlParser`,
/// `.xmlTree`, `.image`, and ``CompoundResponseSerializer`` to try several in order.
public protocol ResponseSerializer: Sendable {
    /// The value produced.
    associatedtype Output

    /// The MIME types this serializer understands (lower-case; `+json` style suffixes and
    /// `type/*` wildcards allowed); nil accepts any. Default nil.
    var acceptableContentTypes: Set<String>? { get }

    /// The value for a response that by HTTP's rules has no body (204, 205, HEAD).
    /// - Parameters:
    ///   - request: The request sent last.
    ///   - response: The response head.
    /// - Returns: The empty value (empty `Data`, `""`, `NSNull` for JSON).
    /// - Throws: When the type has no empty value (the default): a Decodable model, an image.
    func emptyResponseValue(request: URLRequest, response: HTTPResponseHead) throws -> Output

    /// Produces the value for a response.
    /// - Parameters:
    ///   - request: The request that was sent last (after redirects).
    ///   - response: The response head.
    ///   - data: The body; empty when the server sent none.
    /// - Returns: The value.
    /// - Throws: Any error; the operation wraps it in ``ConveyorError/responseSerializationFailed(underlying:response:data:)``.
    func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> Output
}

extension ResponseSerializer {
    /// Accepts any content type.
    public var acceptableContentTypes: Set<String>? { nil }

    /// Throws ``ResponseSerializationError/emptyBody``: most types have no empty value.
    public func emptyResponseValue(request: URLRequest, response: HTTPResponseHead) throws -> Output {
        throw ResponseSerializationError.emptyBody(status: response.statusCode)
    }
}

/// Why a serializer could not produce a value (the `underlying` error of
/// ``ConveyorError/responseSerializationFailed(underlying:response:data:)``).
public enum ResponseSerializationError: Error, Sendable, CustomStringConvertible {
    /// The response had no body, and the requested type has no empty value.
    case emptyBody(status: Int)
    /// The charset named by the response is unknown to Foundation and iconv.
    case unknownCharset(String)
    /// The bytes are not valid in the charset the response named.
    case invalidText(charset: String)
    /// The body is not an image, or not of the type the response claimed.
    case notAnImage(claimed: String?, detected: String?)
    /// The body is not valid XML.
    case invalidXML(line: Int, column: Int, reason: String)

    /// A readable explanation.
    public var description: String {
        switch self {
        case .emptyBody(let status): return "the \(status) response has no body to decode"
        case .unknownCharset(let name): return "unknown charset \"\(name)\""
        case .invalidText(let charset): return "the body is not valid \(charset) text"
        case .notAnImage(let claimed, let detected):
            return
                "the body is \(detected.map { "a \($0) image" } ?? "not a recognised image")\(claimed.map { ", but the response claims \($0)" } ?? "")"
        case .invalidXML(let line, let column, let reason): return "invalid XML at \(line):\(column): \(reason)"
        }
    }
}

/// Matches MIME types against acceptable sets with `type/*`, `*/*` and `+suffix` entries.
enum ContentTypes {
    static func matches(_ mimeType: String?, _ acceptable: Set<String>) -> Bool {
        // `*/*` accepts anything, even a response that names no type.
        if acceptable.contains("*/*") { return true }
        guard let mimeType = mimeType?.lowercased() else { return false }
        if acceptable.contains(mimeType) { return true }
        let parts = mimeType.split(separator: "/", maxSplits: 1)
        if parts.count == 2 {
            if acceptable.contains("\(parts[0])/*") { return true }
            if let plus = parts[1].lastIndex(of: "+"), acceptable.contains(String(parts[1][plus...])) { return true }
        }
        return false
    }
}

/// Passes the body through unchanged.
public struct DataResponseSerializer: ResponseSerializer {
    /// Creates the serializer.
    public init() {}

    /// Empty `Data`.
    public func emptyResponseValue(request: URLRequest, response: HTTPResponseHead) throws -> Data { Data() }

    /// Returns `data` itself.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> Data { data }
}

extension ResponseSerializer where Self == DataResponseSerializer {
    /// The body's bytes, unchanged. The default of ``HTTPRequestOperation``.
    public static var data: DataResponseSerializer { DataResponseSerializer() }
}

/// Built-in serializers whose work on a small body costs less than a thread hop: an
/// operation runs them on the transport's delegate thread for bodies up to
/// `HTTPRequestOperation.inlineSerializationLimit`, instead of on the processing queue
/// (each hop is a thread wake-up; measured per small GET in Benchmarks/profile). Custom
/// serializers and image processing always go to the processing queue.
protocol CheapSerialization {}
extension DataResponseSerializer: CheapSerialization {}
extension StringResponseSerializer: CheapSerialization {}
extension JSONResponseSerializer: CheapSerialization {}
extension DecodableResponseSerializer: CheapSerialization {}
extension PropertyListResponseSerializer: CheapSerialization {}

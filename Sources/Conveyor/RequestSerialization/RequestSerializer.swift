import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Request parameters: string keys with nested values (strings, numbers, booleans, `nil` or
/// `NSNull`, arrays, sets and dictionaries of the same).
///
/// `Any` rather than `any Sendable` on purpose: a mixed literal such as `["ids": [1, "two"]]`
/// infers `[Any]`, which is not `Sendable`, and would not compile. Parameters are encoded into
/// the request synchronously, before any hop between threads, so nothing shared escapes.
public typealias Parameters = [String: Any]

/// Encodes parameters into a request: into its URL's query, or into its body with a matching
/// `Content-Type`.
///
/// Presets: ``FormURLEncodedRequestSerializer/formURLEncoded`` (the default of every client).
public protocol RequestSerializer: Sendable {
    /// Returns `request` with `parameters` encoded into it.
    /// - Parameters:
    ///   - request: The request to encode into; its method decides where parameters go.
    ///   - parameters: The parameters, or nil for none.
    /// - Returns: The encoded request.
    /// - Throws: ``ConveyorError/parameterEncodingFailed(reason:)`` when a value cannot be encoded.
    func serialize(_ request: URLRequest, parameters: Parameters?) throws -> URLRequest
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Request parameters: string keys with nested values (strings, numbers, booleans, `nil` or
/// `NSNull`, arrays, sets and dictionaries of the same).
public typealias Parameters = [String: any Sendable]

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

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Stands between building a request and sending it: stamps a credential on every attempt, and
/// refreshes it — once for all waiting operations — when it expires or the server refuses it.
///
/// Install one on a client (``HTTPClient/Configuration/authenticator``); every operation the
/// client builds or enqueues then runs through it:
///
/// 1. before each attempt the operation asks ``apply(to:)`` for the request to send; when it
///    returns nil (no credential yet, or one about to expire) the operation waits for
///    ``refresh(replacing:completion:)`` and asks again;
/// 2. a response that ``requiresRefresh(_:)`` (a 401), to a request that carried the current
///    credential, makes the operation wait for a refresh and send the request once more — a
///    replay, not a retry attempt; a second refusal is the answer.
///
/// While one refresh runs, every operation that needs one waits for it; its result releases
/// them all at once. ``BearerTokenAuthenticator`` is the ready implementation for OAuth-style
/// access and refresh tokens.
public protocol Authenticator: AnyObject, Sendable {
    /// Stamps the current credential on `request`.
    /// - Parameter request: The attempt about to be sent; set its `Authorization` (or other) header.
    /// - Returns: An identifier of the credential stamped — compared by
    ///   ``refresh(replacing:completion:)`` to tell a stale refusal from a current one — or nil
    ///   when there is no usable credential and a refresh must come first.
    func apply(to request: inout URLRequest) -> String?

    /// Whether `response` says the credential was refused (by default a 401).
    /// - Parameter response: A response head.
    /// - Returns: true when a refresh and a replay may fix it.
    func requiresRefresh(_ response: HTTPResponseHead) -> Bool

    /// Gets a new credential, once for every caller that asks while it runs.
    ///
    /// When the credential identified by `credentialID` has already been replaced (another
    /// operation's refresh finished first), `completion` runs at once with success.
    /// - Parameters:
    ///   - credentialID: What ``apply(to:)`` returned for the refused attempt; nil when no
    ///     credential was applied.
    ///   - completion: Called once, from any thread, with the refresh's outcome: success, or
    ///     ``ConveyorError/credentialRefreshFailed(reason:)``.
    func refresh(replacing credentialID: String?, completion: @escaping @Sendable (Result<Void, ConveyorError>) -> Void)
}

extension Authenticator {
    /// A 401.
    public func requiresRefresh(_ response: HTTPResponseHead) -> Bool { response.statusCode == 401 }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// Sends HTTP Basic credentials with every request (a default `Authorization` header).
    /// - Parameters:
    ///   - username: The user name.
    ///   - password: The password.
    public func setAuthorizationHeader(username: String, password: String) {
        let token = Data("\(username):\(password)".utf8).base64EncodedString()
        setDefaultHeader("Authorization", value: "Basic \(token)")
    }

    /// Sends a bearer token with every request (`Authorization: Bearer <token>`).
    /// - Parameter token: The token.
    public func setAuthorizationHeader(token: String) {
        setDefaultHeader("Authorization", value: "Bearer \(token)")
    }

    /// Stops sending an `Authorization` header.
    public func clearAuthorizationHeader() {
        setDefaultHeader("Authorization", value: nil)
    }

    /// The credential operations use to answer authentication challenges, unless they have
    /// their own. Each challenge is answered once: a credential the server rejects fails the
    /// operation with ``ConveyorError/authenticationFailed(response:data:)`` (never a hang).
    /// While set, its `user:password`, their base64 and the password are masked in every text
    /// Conveyor emits (``Redaction/masksSentValues``).
    public var defaultCredential: URLCredential? {
        get { mutableState.withLock { $0.defaultCredential.value } }
        set {
            mutableState.withLock { state in
                state.defaultCredential = LockedReference(newValue)
                state.pinConfiguredSecrets()
            }
        }
    }
}

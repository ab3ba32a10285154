import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends `Authorization: Bearer <access token>` with every request and gets a new token from
/// your `refresh` closure — once, however many requests need it at the same time — when the
/// token is about to expire or the server answers 401.
///
/// ```swift
/// let authenticator = BearerTokenAuthenticator(credential: saved) { old in
///     // Runs once for every operation waiting; use a client without this authenticator.
///     let reply = try await authClient.post("oauth/token", parameters: [
///         "grant_type": "refresh_token", "refresh_token": old?.refreshToken ?? "",
///     ])
///     return try BearerTokenAuthenticator.Credential(json: reply)
/// }
/// var configuration = HTTPClient.Configuration.default
/// configuration.authenticator = authenticator
/// ```
public final class BearerTokenAuthenticator: Authenticator, @unchecked Sendable {
    // @unchecked Sendable: all mutable state (the credential and the refresh in flight) is in
    // `state`, behind one Mutex; the settings are immutable.

    /// An access token, when it expires if known, and the refresh token that gets the next one.
    public struct Credential: Sendable, Equatable {
        /// Sent as `Authorization: Bearer <accessToken>`.
        public var accessToken: String
        /// When the access token stops working; nil when unknown (it is then used until refused).
        public var expiresAt: Date?
        /// What your refresh closure exchanges for the next credential; Conveyor never sends it.
        public var refreshToken: String?

        /// Creates a credential.
        /// - Parameters:
        ///   - accessToken: The access token.
        ///   - expiresAt: When it expires; nil when unknown.
        ///   - refreshToken: The refresh token; nil for none.
        public init(accessToken: String, expiresAt: Date? = nil, refreshToken: String? = nil) {
            self.accessToken = accessToken
            self.expiresAt = expiresAt
            self.refreshToken = refreshToken
        }
    }

    /// Gets the next credential from the current one (nil when there is none yet).
    public typealias Refresh = @Sendable (_ current: Credential?) async throws -> Credential

    /// Seconds before ``Credential/expiresAt`` at which the token is refreshed rather than
    /// sent. Default 60.
    public let refreshWindow: TimeInterval
    /// The longest a refresh may take; one that takes longer fails every waiting operation
    /// with ``ConveyorError/CredentialRefreshFailureReason/timedOut(after:)``. Default 30.
    public let refreshTimeout: TimeInterval

    private let refreshCredential: Refresh
    private struct State {
        var credential: Credential?
        var waiting: [@Sendable (Result<Void, ConveyorError>) -> Void]?
        var refreshCount = 0
    }
    private let state: Lock<State>

    /// Creates an authenticator.
    /// - Parameters:
    ///   - credential: The credential to start with; nil refreshes before the first request.
    ///   - refreshWindow: Seconds before expiry at which to refresh; default 60.
    ///   - refreshTimeout: The longest a refresh may take; default 30.
    ///   - refresh: Gets a new credential; called once for all operations waiting for one.
    public init(
        credential: Credential?, refreshWindow: TimeInterval = 60, refreshTimeout: TimeInterval = 30, refresh: @escaping Refresh
    ) {
        self.refreshWindow = refreshWindow
        self.refreshTimeout = refreshTimeout
        self.refreshCredential = refresh
        self.state = Lock(State(credential: credential))
    }

    /// The credential sent now; nil before the first refresh succeeded.
    public var credential: Credential? { state.withLock { $0.credential } }

    /// How many refreshes have been started (each served every operation waiting then).
    public var refreshCount: Int { state.withLock { $0.refreshCount } }

    /// Stamps `Authorization: Bearer <token>`; nil (refresh first) when there is no token, one
    /// expiring within ``refreshWindow``, or a refresh running.
    /// - Parameter request: The attempt about to be sent.
    /// - Returns: The access token stamped, as the credential's identifier.
    public func apply(to request: inout URLRequest) -> String? {
        let now = Date()
        let token = state.withLock { state -> String? in
            guard state.waiting == nil, let credential = state.credential else { return nil }
            if let expiry = credential.expiresAt, expiry.timeIntervalSince(now) <= refreshWindow { return nil }
            return credential.accessToken
        }
        guard let token else { return nil }
        request.setHeader("Bearer \(token)", for: "Authorization")
        return token
    }

    /// Runs your refresh closure once for everyone waiting (see ``Authenticator``), bounded by
    /// ``refreshTimeout``.
    /// - Parameters:
    ///   - credentialID: The access token the refused attempt carried; nil for none.
    ///   - completion: Called once with the outcome.
    public func refresh(replacing credentialID: String?, completion: @escaping @Sendable (Result<Void, ConveyorError>) -> Void) {
        enum Start {
            case joined, alreadyReplaced
            case begin(Credential?)
        }
        let now = Date()
        let start = state.withLock { state -> Start in
            if state.waiting != nil {
                state.waiting!.append(completion)
                return .joined  // the refresh in flight serves this caller too
            }
            // Replaced since that attempt was stamped, and still good: nothing to do.
            if let credential = state.credential, credential.accessToken != credentialID,
                credential.expiresAt.map({ $0.timeIntervalSince(now) > refreshWindow }) ?? true
            {
                return .alreadyReplaced
            }
            state.waiting = [completion]
            state.refreshCount += 1
            return .begin(state.credential)
        }
        switch start {
        case .joined: return
        case .alreadyReplaced: completion(.success(()))
        case .begin(let current): run(from: current)
        }
    }

    private func run(from current: Credential?) {
        let refresh = refreshCredential
        let timeout = refreshTimeout
        Task {
            let result: Result<Credential, ConveyorError>
            do {
                let credential = try await withThrowingTaskGroup(of: Credential?.self) { group in
                    group.addTask { try await refresh(current) }
                    group.addTask {
                        try await Task.sleep(nanoseconds: UInt64(max(0, timeout) * 1e9))
                        return nil  // the timeout won
                    }
                    defer { group.cancelAll() }
                    return try await group.next() ?? nil
                }
                result = credential.map { .success($0) } ?? .failure(.credentialRefreshFailed(reason: .timedOut(after: timeout)))
            } catch {
                result = .failure(.credentialRefreshFailed(reason: .refreshFailed(error)))
            }
            let waiting = state.withLock { state -> [@Sendable (Result<Void, ConveyorError>) -> Void] in
                if case .success(let credential) = result { state.credential = credential }
                defer { state.waiting = nil }
                return state.waiting ?? []
            }
            let outcome = result.map { _ in () }
            for completion in waiting { completion(outcome) }
        }
    }
}

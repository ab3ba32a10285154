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
public final class BearerTokenAuthenticator: Authenticator, Sendable {
    // Sendable, checked by the compiler: all mutable state (the credential and the refresh in
    // flight) is in `state`, behind one Mutex; the settings are immutable.

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
    /// The longest a refresh may take, at most ``maximumRefreshTimeout``: at this deadline every
    /// waiting operation fails with ``ConveyorError/CredentialRefreshFailureReason/timedOut(after:)``,
    /// whatever the closure does (it is cancelled, and a late result is discarded). Default 30.
    public let refreshTimeout: TimeInterval

    /// The longest ``refreshTimeout`` there is: 3,600 s. A longer one (`.infinity` included) is
    /// clamped to it; a negative or NaN one becomes 0.
    public static let maximumRefreshTimeout: TimeInterval = 3600

    private let refreshCredential: Refresh
    private struct State {
        var credential: Credential?
        /// The credential came from the last refresh: it is sent as it is, even inside the
        /// refresh window, until it expires (refreshing again at once would loop).
        var isFromRefresh = false
        var waiting: [@Sendable (Result<Void, ConveyorError>) -> Void]?
        var refreshCount = 0
        /// Numbers each refresh, so that the loser of the race between a refresh and its
        /// timeout finds it settled.
        var generation = 0
        var timeoutTimer: DeadlineTimer?
    }
    private let state: Lock<State>

    /// Creates an authenticator.
    /// - Parameters:
    ///   - credential: The credential to start with; nil refreshes before the first request.
    ///   - refreshWindow: Seconds before expiry at which to refresh; default 60 (clamped to
    ///     0 ... 1 day: NaN or a negative value is 0).
    ///   - refreshTimeout: The longest a refresh may take; default 30 (clamped to 0 ...
    ///     ``maximumRefreshTimeout``).
    ///   - refresh: Gets a new credential; called once for all operations waiting for one.
    public init(
        credential: Credential?, refreshWindow: TimeInterval = 60, refreshTimeout: TimeInterval = 30, refresh: @escaping Refresh
    ) {
        self.refreshWindow = Seconds.clamped(refreshWindow, to: 0...86_400)
        self.refreshTimeout = Seconds.clamped(refreshTimeout, to: 0...Self.maximumRefreshTimeout)
        self.refreshCredential = refresh
        self.state = Lock(State(credential: credential))
        SentSecrets.shared.pin(Self.secrets(of: credential))
    }

    /// The tokens are masked in every text Conveyor emits while this authenticator holds them.
    deinit { SentSecrets.shared.unpin(Self.secrets(of: state.withLock { $0.credential })) }

    /// The values of `credential` to mask: the access token, and the refresh token (your
    /// refresh closure sends it, perhaps through Conveyor, perhaps under a name the redaction
    /// does not know).
    private static func secrets(of credential: Credential?) -> [String] {
        guard let credential else { return [] }
        return [credential.accessToken] + (credential.refreshToken.map { [$0] } ?? [])
    }

    /// The credential sent now; nil before the first refresh succeeded.
    public var credential: Credential? { state.withLock { $0.credential } }

    /// How many refreshes have been started (each served every operation waiting then).
    public var refreshCount: Int { state.withLock { $0.refreshCount } }

    /// Stamps `Authorization: Bearer <token>`; nil (refresh first) when there is no token, one
    /// expiring within ``refreshWindow`` (unless the last refresh just returned it: a fresh
    /// credential is used as it is until it expires), or a refresh running.
    /// - Parameter request: The attempt about to be sent.
    /// - Returns: The access token stamped, as the credential's identifier.
    public func apply(to request: inout URLRequest) -> String? {
        let now = Date()
        let token = state.withLock { state -> String? in
            guard state.waiting == nil, let credential = state.credential, isUsable(credential, fresh: state.isFromRefresh, at: now)
            else { return nil }
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
            case begin(Credential?, generation: Int)
        }
        let now = Date()
        let start = state.withLock { state -> Start in
            if state.waiting != nil {
                state.waiting!.append(completion)
                return .joined  // the refresh in flight serves this caller too
            }
            // Replaced since that attempt was stamped, and still good: nothing to do.
            if let credential = state.credential, credential.accessToken != credentialID,
                isUsable(credential, fresh: state.isFromRefresh, at: now)
            {
                return .alreadyReplaced
            }
            state.waiting = [completion]
            state.refreshCount += 1
            state.generation += 1
            return .begin(state.credential, generation: state.generation)
        }
        switch start {
        case .joined: return
        case .alreadyReplaced: completion(.success(()))
        case .begin(let current, let generation): run(from: current, generation: generation)
        }
    }

    /// Whether `credential` may be sent at `now`: not expired, and outside the refresh window
    /// unless it is `fresh` from a refresh.
    private func isUsable(_ credential: Credential, fresh: Bool, at now: Date) -> Bool {
        guard let expiry = credential.expiresAt else { return true }
        let left = expiry.timeIntervalSince(now)
        return fresh ? left > 0 : left > refreshWindow
    }

    /// Runs the caller's closure in a Task of its own and arms Conveyor's own timer beside it:
    /// whichever ends first settles the refresh. The timer does not wait for the closure (a
    /// task group would, and a closure that ignores cancellation held every waiting operation).
    private func run(from current: Credential?, generation: Int) {
        let refresh = refreshCredential
        let timeout = refreshTimeout
        let work = Task { [weak self] in
            let result: Result<Credential, ConveyorError>
            do {
                result = .success(try await refresh(current))
            } catch {
                result = .failure(.credentialRefreshFailed(reason: .refreshFailed(error)))
            }
            self?.settle(generation, with: result)
        }
        let timer = DeadlineScheduler.shared.schedule(after: timeout) { [weak self] in
            // Off the timer thread: completions resume operations. The timeout settles first and
            // the closure is cancelled after: cancelled first, a closure that throws on
            // cancellation (`Task.sleep`) settled the refresh with its CancellationError before
            // the timeout could, and the waiting operations saw "refresh failed", not "timed out".
            guard let self else { return work.cancel() }
            DispatchQueue.global().async {
                self.settle(generation, with: .failure(.credentialRefreshFailed(reason: .timedOut(after: timeout))))
                work.cancel()
            }
        }
        state.withLock { state in
            // The refresh may have settled already (a closure that returns at once).
            if state.generation == generation, state.waiting != nil { state.timeoutTimer = timer } else { timer.cancel() }
        }
    }

    /// Ends refresh `generation` once: the first of the closure and the timeout wins; the other
    /// finds it settled and is discarded.
    private func settle(_ generation: Int, with result: Result<Credential, ConveyorError>) {
        let now = Date()
        let settled = state.withLock { state -> ([@Sendable (Result<Void, ConveyorError>) -> Void], Result<Void, ConveyorError>)? in
            guard state.generation == generation, let waiting = state.waiting else { return nil }
            state.waiting = nil
            state.timeoutTimer?.cancel()
            state.timeoutTimer = nil
            switch result {
            case .success(let credential):
                // Expired on arrival: sending it would be refused, and refreshing again at once
                // would loop. The waiting operations fail; the next request refreshes anew.
                if let expiry = credential.expiresAt, expiry <= now {
                    return (waiting, .failure(.credentialRefreshFailed(reason: .expiredOnArrival(expiresAt: expiry))))
                }
                // The new tokens are held for masking from now on; the old ones are let go
                // (remembered as recently used).
                SentSecrets.shared.pin(Self.secrets(of: credential))
                SentSecrets.shared.unpin(Self.secrets(of: state.credential))
                state.credential = credential
                state.isFromRefresh = true
                return (waiting, .success(()))
            case .failure(let error):
                return (waiting, .failure(error))
            }
        }
        guard let (waiting, outcome) = settled else { return }
        for completion in waiting { completion(outcome) }
    }
}

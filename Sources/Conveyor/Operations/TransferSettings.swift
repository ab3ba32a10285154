import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every setting a transfer reads, resolved once: when the operation starts, and again when it
/// resumes after `pause()`. Each comes from the operation's own assignment, else from its
/// client's (adopted when the client built or enqueued it, see `adoptSettings(of:)`), else from
/// the request (`timeoutInterval` for the idle timeout, `cachePolicy`).
///
/// The transfer's events read this value instead of reading each setting under the operation's
/// lock: a setting assigned while the operation runs applies from its next resume (the rule
/// ``HTTPRequestOperation`` documents). Not here, because they are read when their event
/// happens: the completion, progress, response-received and chunk blocks, and the output stream.
///
/// Immutable, so one instance serves every event of a run without a lock; made only when the
/// operation starts and kept in its transfer record, so a waiting operation carries none.
final class ResolvedSettings: Sendable {
    // Sendable, checked by the compiler: immutable.

    /// The timeouts of a run. `idle` is the one home of the idle timeout: the operation's timer,
    /// the transport (through ``AttemptPlan``) and the `.timedOut(.idle, after:)` error read it.
    struct Timeouts: Sendable {
        /// Seconds without a byte moving; zero, negative, NaN or infinite for none.
        let idle: TimeInterval
        /// Seconds one attempt may take; nil for no limit.
        let resource: TimeInterval?
    }

    /// How the attempts use the cache.
    struct CacheUse: Sendable {
        let cache: HTTPCache
        let policy: HTTPCache.Policy
        let responseHandler: CacheResponseHandler?
        /// Whether the adopting client's host is known to be unreachable now (false without one).
        let isUnreachable: @Sendable () -> Bool
    }

    let transport: any Transport
    /// The client's request adapters and event monitors.
    let hooks: ClientHooks?
    /// The adopting client's credential origins, which tell its adapters whether an attempt
    /// goes to one of them; nil without a client.
    let credentialScope: CredentialScope?
    let callbackQueue: DispatchQueue
    /// Completion blocks run on the finishing thread instead of ``callbackQueue``.
    let deliversInline: Bool
    let acceptableStatusCodes: IndexSet
    /// The operation's types, else its serializer's.
    let acceptableContentTypes: Set<String>?
    let responseSerializer: any ResponseSerializer
    let redirectPolicy: RedirectPolicy
    let retryPolicy: RetryPolicy
    let timeouts: Timeouts
    let maximumResponseSize: Int64?
    /// Nil sends every attempt to the network.
    let cache: CacheUse?
    let credential: URLCredential?
    let challengeHandler: AuthenticationChallengeHandler?
    let authenticator: (any Authenticator)?

    /// Resolves `state`'s settings for `request` (the operation's own request, whose
    /// `cachePolicy` stands between the operation's and the client's).
    init(_ state: HTTPRequestOperation.MutableState, request: URLRequest) {
        transport = state.transport
        hooks = state.clientHooks
        let client = state.adoptedClient
        credentialScope = client?.credentialScope
        callbackQueue = state.callbackQueue
        deliversInline = state.deliversInline
        acceptableStatusCodes = state.acceptableStatusCodes
        acceptableContentTypes = state.effectiveAcceptableContentTypes
        responseSerializer = state.responseSerializer
        redirectPolicy = state.redirectPolicy
        retryPolicy = state.retryPolicy
        timeouts = Timeouts(idle: state.idleTimeout, resource: state.resourceTimeout)
        maximumResponseSize = state.maximumResponseSize
        cache = state.cache.map { cache in
            CacheUse(
                cache: cache, policy: state.effectiveCachePolicy(for: request), responseHandler: state.cacheResponseHandler,
                isUnreachable: { [weak client] in client?.reachabilityStatus == .notReachable })
        }
        credential = state.credential.value
        challengeHandler = state.challengeHandler
        authenticator = state.authenticator
    }

    /// The queue the completion blocks run on; nil runs them on the finishing thread.
    var completionQueue: DispatchQueue? { deliversInline ? nil : callbackQueue }

    /// What the transport is told about an attempt.
    var attemptPlan: AttemptPlan { AttemptPlan(idleTimeout: timeouts.idle) }
}

extension HTTPRequestOperation.MutableState {
    /// The settings the transfer runs with: those resolved when the operation started or last
    /// resumed. Before that — nothing of a transfer reads them then — what they would resolve to now.
    var settings: ResolvedSettings { transfer.settings ?? ResolvedSettings(self, request: transfer.currentRequest) }

    /// Resolves the settings for the run that begins now (a start, or a resume after `pause()`).
    /// - Parameter request: The operation's own request.
    mutating func resolveSettings(for request: URLRequest) {
        transfer.settingsResolved(ResolvedSettings(self, request: request))
    }
}

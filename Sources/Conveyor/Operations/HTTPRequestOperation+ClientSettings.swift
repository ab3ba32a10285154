import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// The settings an operation takes from the client that builds or enqueues it, each
    /// remembered once it is assigned on the operation itself (so that one wins).
    struct ClientSettings: OptionSet, Sendable {
        let rawValue: UInt16
        static let callbackQueue = ClientSettings(rawValue: 1 << 0)
        static let redirectPolicy = ClientSettings(rawValue: 1 << 1)
        static let retryPolicy = ClientSettings(rawValue: 1 << 2)
        static let resourceTimeout = ClientSettings(rawValue: 1 << 3)
        static let challengeHandler = ClientSettings(rawValue: 1 << 4)
        static let cache = ClientSettings(rawValue: 1 << 5)
        static let maximumResponseSize = ClientSettings(rawValue: 1 << 6)
        static let credential = ClientSettings(rawValue: 1 << 7)
        static let authenticator = ClientSettings(rawValue: 1 << 8)
    }

    /// Assigns a client-inheritable setting on behalf of the operation's owner: it wins over
    /// the client's from now on.
    func assign<Value>(_ path: WritableKeyPath<MutableState, Value>, _ value: Value, as setting: ClientSettings) {
        mutableState.withLock { state in
            state[keyPath: path] = value
            state.assignedSettings.insert(setting)
        }
    }

    /// The one place an operation takes a client's settings, once per client: when the client
    /// builds it, or when a client enqueues an operation it did not build (one built directly,
    /// or by another client) — the enqueue skips an operation this client built, in the lock
    /// it takes anyway. The transport always comes from the client — it carries the client's
    /// TLS authorities, pins and connection pool; every other setting only where the
    /// operation's owner did not assign it.
    func adoptSettings(of client: HTTPClient) {
        let configuration = client.configuration
        // The client's credentials go to its own origins only: an operation for another origin
        // gets neither its default credential nor its authenticator (asked only when it has one).
        var defaultCredential = client.defaultCredential
        var authenticator = configuration.authenticator
        if defaultCredential != nil || authenticator != nil, !client.credentialScope.contains(request.url) {
            defaultCredential = nil
            authenticator = nil
        }
        mutableState.withLock { state in
            if state.settingsAdoptions < .max { state.settingsAdoptions += 1 }
            state.adoptedClient = client
            state.transport = client.transport
            state.clientHooks = client.hooks
            state.defaultCachePolicy = configuration.cachePolicy
            let assigned = state.assignedSettings
            if !assigned.contains(.callbackQueue) { state.callbackQueue = configuration.callbackQueue }
            if !assigned.contains(.redirectPolicy) { state.redirectPolicyBox = client.policyBoxes.redirect }
            if !assigned.contains(.retryPolicy) { state.retryPolicyBox = client.policyBoxes.retry }
            if !assigned.contains(.resourceTimeout) { state.resourceTimeout = configuration.resourceTimeout }
            if !assigned.contains(.challengeHandler) { state.challengeHandler = configuration.authenticationChallengeHandler }
            if !assigned.contains(.cache) { state.cache = configuration.cache }
            if !assigned.contains(.maximumResponseSize) { state.maximumResponseSize = configuration.maximumResponseSize }
            if !assigned.contains(.credential) { state.credential = LockedReference(defaultCredential) }
            if !assigned.contains(.authenticator) { state.authenticator = authenticator }
        }
        client.hooks?.monitors?.post(self) { $0.requestWasCreated(self) }
    }
}

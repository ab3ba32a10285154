import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// The settings of a client, fixed when it is created.
    public struct Configuration: @unchecked Sendable {
        // @unchecked: `sessionConfiguration` is a class; the client copies it once at creation
        // and never shares or mutates the copy, and the property is documented as a template.

        /// Idle timeout in seconds: a request fails with ``ConveyorError/timedOut(_:after:)``
        /// when no byte moves for this long. Fractions are honoured. The client stamps it on
        /// the requests it builds (`timeoutInterval`), where an operation's
        /// ``HTTPRequestOperation/idleTimeout`` takes it from. Default 60.
        ///
        /// On Linux, time a request spends waiting for a connection — its origin's
        /// ``maximumConnectionsPerHost`` connections all busy with other requests — does not
        /// count: the curl transport starts the clock when libcurl resolves, connects or hands
        /// over a connection, and the URLSession transport holds such a request back until one
        /// of its origin's requests ends. On Apple platforms URLSession queues it itself and
        /// cannot say when it is sent, so there the wait counts: with long transfers, keep
        /// ``maximumConcurrentOperations`` near the connections you allow, or raise the idle timeout.
        public var idleTimeout: TimeInterval = 60
        /// How many connections the transport opens to one host at most; requests beyond them
        /// wait for a connection. Honoured by both transports (it replaces the session
        /// template's `httpMaximumConnectionsPerHost`). Default 6, URLSession's own default —
        /// except with the URLSession transport on Linux, where a client that does not set it
        /// opens 4: corelibs keeps only 4 idle connections per transfer in flight, so a 5th and
        /// 6th were closed and reopened at every lull (up to 200 new connections per 2,000
        /// requests at 16 in flight; none with 4). A value you set is used as it is.
        public var maximumConnectionsPerHost: Int {
            get { assignedMaximumConnectionsPerHost ?? 6 }
            set { assignedMaximumConnectionsPerHost = newValue }
        }
        /// The value set for ``maximumConnectionsPerHost``; nil while it is the default.
        var assignedMaximumConnectionsPerHost: Int?
        /// Whether the URLSession transport sends stream bodies through a ``BodyStreamPump`` on
        /// Linux, as it always does on Apple platforms (see
        /// ``URLSessionTransport/pumpsBodyStreams``). For tests, which run the pump through the
        /// real transport this way; default off.
        var pumpsBodyStreams = false
        /// How many operations run at once. Default 8 (operations beyond it wait in the queue,
        /// where their timeout does not run yet).
        public var maximumConcurrentOperations = 8
        /// Where completion blocks run. Default `DispatchQueue.conveyorDefaultCallbackQueue`:
        /// `.main` on Apple platforms, a Conveyor serial queue on Linux.
        public var callbackQueue: DispatchQueue = .conveyorDefaultCallbackQueue
        /// Which redirects are followed. Default ``RedirectPolicy/default``.
        public var redirectPolicy: RedirectPolicy = .default
        /// When failed operations are sent again. Default ``RetryPolicy/none``.
        public var retryPolicy: RetryPolicy = .none
        /// Seconds one attempt may take, redirects included (see
        /// ``HTTPRequestOperation/resourceTimeout``; a retry gets the budget again); nil for no
        /// limit (the default). URLSession's own resource timeout is ignored on Linux, so
        /// Conveyor runs its own timer.
        public var resourceTimeout: TimeInterval?
        /// Stamps a credential on every request and refreshes it once for all waiting
        /// operations (``BearerTokenAuthenticator``); nil (the default) for none.
        public var authenticator: (any Authenticator)?
        /// Change every attempt of every operation the client builds or enqueues, in order,
        /// after the ``authenticator`` and before anything is sent (see ``RequestAdapter``).
        /// Default none.
        public var requestAdapters: [any RequestAdapter] = []
        /// Observe every step of every operation the client builds or enqueues, on one serial
        /// queue of the client's, never on the transfer's thread (see ``EventMonitor``).
        /// Default none.
        public var eventMonitors: [any EventMonitor] = []
        /// Origins besides the base URL's that receive the client's credentials: the
        /// ``authenticator``'s, a default `Authorization` header (and the other headers in
        /// ``RedirectPolicy/headersRemovedAcrossOrigins``) and ``HTTPClient/defaultCredential``.
        /// A request to any other origin — an absolute URL (`https://other.example/x`) or a
        /// scheme-relative path (`//other.example/x`) — is sent without them. Only the scheme,
        /// host and port of each URL count. A client without a base URL sends credentials to
        /// these origins alone. Default none.
        public var credentialOrigins: [URL] = []
        /// Decides how authentication challenges are answered; nil uses the credentials.
        public var authenticationChallengeHandler: AuthenticationChallengeHandler?
        /// The template for the client's `URLSession`; copied at creation, with its `urlCache`
        /// turned off. The curl transport takes its cookie storage and accept policy,
        /// `httpShouldSetCookies` and `httpAdditionalHeaders` too. Its
        /// `httpMaximumConnectionsPerHost` is replaced by ``maximumConnectionsPerHost``.
        /// Default `.default`.
        public var sessionConfiguration: URLSessionConfiguration = .default

        /// Which transport sends the client's requests. Default ``TransportKind/automatic``:
        /// libcurl's multi interface on Linux (faster, and the only way to customise TLS
        /// there), URLSession on Apple platforms.
        public var transport: TransportKind = .automatic
        /// How requests reach the network: the environment's proxies (the default, as before
        /// this setting existed), none, or an HTTP, HTTPS or SOCKS5 proxy of the client's own,
        /// with credentials and a bypass list (see ``HTTPClient/Proxy``). A malformed proxy fails
        /// every request with ``ConveyorError/RouteFailureReason/invalidProxy(_:detail:)`` and
        /// ``validate()`` reports it. The URLSession transport on Linux honours only
        /// ``HTTPClient/Proxy/environment`` (corelibs ignores `connectionProxyDictionary`).
        public var proxy: Proxy = .environment
        /// A Unix domain socket that every request of the client is sent over instead of TCP
        /// (`curl --unix-socket`): a local daemon such as Docker's `/var/run/docker.sock`, or a
        /// sidecar. URLs keep their `http(s)` form (`http://localhost/v1.43/info`); the host
        /// becomes the `Host` field and nothing else. nil (the default) connects as the URL
        /// says. To reach a socket from some requests only, use an `http+unix` URL instead
        /// (see ``HTTPClient/isUnixSocketURL(_:)``), whose cache keys also name the socket.
        ///
        /// Curl transport only: the URLSession transport refuses every request of such a client
        /// with ``ConveyorError/RouteFailureReason/unsupportedByTransport(feature:transport:)``
        /// before anything is sent. A path where nothing exists, or something other than a
        /// socket, fails each request with ``ConveyorError/RouteFailureReason/socketNotFound(path:)``
        /// or ``ConveyorError/RouteFailureReason/notASocket(path:)`` (checked per request, so
        /// a daemon that starts later is found). Reachability is not monitored for such a client.
        public var unixSocketPath: String?
        /// Addresses used instead of DNS for some host and port pairs (`curl --resolve`): for
        /// tests that send `api.example.com` to 127.0.0.1, and deployments pinned to known
        /// addresses. TLS still verifies the URL's host name. Default none.
        ///
        /// Curl transport only: the URLSession transport cannot choose the address it connects
        /// to without also changing the name TLS verifies, so it refuses every request of a
        /// client with overrides (``ConveyorError/RouteFailureReason/unsupportedByTransport(feature:transport:)``).
        /// A malformed entry fails every request with
        /// ``ConveyorError/RouteFailureReason/invalidAddressOverride(_:detail:)``; ``validate()``
        /// reports it when the configuration is made.
        public var resolve: [AddressOverride] = []

        /// Which certificates the client trusts: custom authorities, public-key pins, and the
        /// development-only opt-out of validation. Default ``TLSConfiguration/default``.
        public var tls: TLSConfiguration = .default
        /// The most bytes a response body kept in memory may have (see
        /// ``HTTPRequestOperation/maximumResponseSize``); nil for no limit. Default 100 MB.
        public var maximumResponseSize: Int64? = HTTPRequestOperation.defaultMaximumResponseSize
        /// The HTTP cache operations go through; nil turns caching off. Default
        /// ``HTTPCache/shared``. The transport's own `URLCache` is always off, so this is the
        /// only cache.
        public var cache: HTTPCache? = .shared
        /// How operations use ``cache`` unless the operation or its request says otherwise.
        /// Default ``HTTPCache/Policy/useProtocolCachePolicy``.
        public var cachePolicy: HTTPCache.Policy = .useProtocolCachePolicy

        /// Multipart bodies up to this many bytes are built in memory; larger ones are written
        /// to a temporary file and uploaded from it. Default 10 MB.
        public var multipartMemoryThreshold: Int64 = 10_000_000
        /// Where temporary multipart body files go. Default the system's temporary directory.
        public var temporaryDirectory: URL = FileManager.default.temporaryDirectory

        /// Whether the client watches its base URL host's reachability
        /// (``HTTPClient/reachabilityStatus``). Default true.
        public var monitorsReachability = true
        /// Whether the operation queue is suspended while the host is unreachable and resumed
        /// when it returns; queued operations wait rather than fail. Default false.
        public var suspendsQueueWhenUnreachable = false

        /// Decides the base URL host's reachability; nil (the default) uses the platform's.
        /// Inject one to drive transitions in tests.
        public var reachabilityProbe: (any ReachabilityProbe)?
        /// Says when to decide reachability again; nil (the default) uses the platform's.
        public var reachabilityEvents: (any ReachabilityEventSource)?

        /// Creates a configuration with the defaults.
        public init() {}

        /// Checks the settings a request would otherwise fail on — the route
        /// (``proxy``, ``unixSocketPath``, ``resolve``) and whether the transport it picks can take it —
        /// so that a service can refuse a bad configuration at start-up. A socket path is only
        /// checked to be usable by the transport here; whether a socket exists there is checked
        /// per request.
        /// - Throws: ``ConveyorError/routeFailed(reason:)`` with the first problem found.
        public func validate() throws(ConveyorError) {
            let kind = TransportFactory.resolve(transport, sessionConfiguration: sessionConfiguration)
            if let error = RouteSettings(self).configurationError(for: kind) { throw error }
        }

        /// The defaults.
        public static var `default`: Configuration { Configuration() }
    }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client for one web API: a base URL, default headers, a request serializer, and an
/// `OperationQueue` running ``HTTPRequestOperation``s.
///
/// Write one subclass per API and expose it as a singleton configured at start-up:
///
/// ```swift
/// final class GitHubClient: HTTPClient, @unchecked Sendable {
///     static let shared = GitHubClient(baseURL: URL(string: "https://api.github.com/")!)
///     override init(baseURL: URL, configuration: HTTPClient.Configuration = .default) {
///         super.init(baseURL: baseURL, configuration: configuration)
///         setDefaultHeader("Accept", value: "application/json")
///     }
///     func user(_ login: String) async throws -> User { try await get("users/\(login)", as: User.self) }
/// }
/// ```
///
/// Paths resolve relative to ``baseURL`` as in AFNetworking: `"users"` appends to the base
/// path, `"/users"` replaces it, `""` is the base URL itself. A full URL or a scheme-relative
/// path (`"//other.example/x"`) leaves the base host, and the client's credentials do not follow
/// it (see ``Configuration/credentialOrigins``). All methods are safe to call from any thread.
open class HTTPClient: @unchecked Sendable {
    // @unchecked Sendable: `baseURL`, `configuration`, `operationQueue`, `transport`,
    // `pathResolver`, `resolvedURLs` and `reachability` are set once in init and are thread-safe objects;
    // everything mutable is in `mutableState`, behind one Mutex.

    /// The URL that paths resolve against; always ends with `/` when it has a path. nil for a
    /// client of absolute URLs (``init(configuration:)``), whose every path must be a full
    /// `http(s)` URL.
    public let baseURL: URL?
    /// The settings the client was created with.
    public let configuration: Configuration
    /// The queue operations run on. Public so callers can add dependencies or suspend it.
    public let operationQueue: OperationQueue

    let transport: any Transport
    /// The configuration's retry and redirect policies, boxed once for every operation to share.
    let policyBoxes: (retry: ColdBox<RetryPolicy>, redirect: ColdBox<RedirectPolicy>)
    /// The configuration's request adapters and event monitors, shared by every operation; nil without either.
    let hooks: ClientHooks?
    /// The queue and transport of streams (``stream(_:bufferLimit:)``, Server-Sent Events).
    let streams = StreamAllowance()
    /// Where the client's credentials may go (the base URL's origin and the named ones).
    let credentialScope: CredentialScope
    private let pathResolver: PathResolver?
    /// URLs already resolved for plain paths (nil without a base URL: every path is absolute).
    private let resolvedURLs: ResolvedURLCache?
    let mutableState: Lock<MutableState>
    /// Watches the base URL host; nil when ``Configuration/monitorsReachability`` is off.
    let reachability: NetworkReachabilityManager?

    struct MutableState {
        var defaultHeaders: HTTPHeaders {
            didSet { defaultHeaderFields = defaultHeaders.dictionary }
        }
        /// `defaultHeaders` as the dictionary a `URLRequest` stores, built once per change: a
        /// request given it shares its storage (about 200 bytes per waiting request for three
        /// fields) instead of building its own, until something adds a field to it.
        private(set) var defaultHeaderFields: [String: String]
        var requestSerializer: any RequestSerializer = FormURLEncodedRequestSerializer()
        var registeredOperationClasses: [HTTPRequestOperation.Type] = []
        /// Immutable once made: read out and used by every operation's challenge handling.
        var defaultCredential = LockedReference<URLCredential?>(nil)
        var reachabilityHandler: UUID?
        /// The credential values of the default headers and the default credential, pinned in
        /// ``SentSecrets`` while the client is configured with them (never forgotten, even when
        /// no request carries them for a while).
        private(set) var configuredSecrets: [String] = []

        init(defaultHeaders: HTTPHeaders) {
            self.defaultHeaders = defaultHeaders
            self.defaultHeaderFields = defaultHeaders.dictionary
        }

        /// Pins the credentials now configured and lets go of those no longer configured
        /// (they stay remembered as recently used). Call after changing either.
        mutating func pinConfiguredSecrets() {
            var values = SentSecrets.values(ofHeaders: defaultHeaderFields)
            if let credential = defaultCredential.value, let password = credential.password {
                values += SentSecrets.basicParts(user: credential.user ?? "", password: password)
            }
            guard values != configuredSecrets else { return }
            SentSecrets.shared.pin(values)
            SentSecrets.shared.unpin(configuredSecrets)
            configuredSecrets = values
        }
    }

    /// Creates a client.
    /// - Parameters:
    ///   - baseURL: The API's root. A path without a trailing `/` gets one, so `"get"` resolves
    ///     to `<base>/get` rather than replacing the last path component.
    ///   - configuration: Timeouts, concurrency, callback queue and session settings; default ``Configuration/default``.
    public init(baseURL: URL, configuration: Configuration = .default) {
        let baseURL = Self.normalized(baseURL)
        self.baseURL = baseURL
        self.pathResolver = PathResolver(baseURL: baseURL)
        self.resolvedURLs = ResolvedURLCache()
        self.credentialScope = CredentialScope(baseURL: baseURL, named: configuration.credentialOrigins)
        self.configuration = configuration
        self.operationQueue = Self.makeQueue(named: baseURL.host ?? baseURL.absoluteString, configuration: configuration)
        self.transport = TransportFactory.make(for: configuration)
        self.policyBoxes = (ColdBox(configuration.retryPolicy), ColdBox(configuration.redirectPolicy))
        self.hooks = ClientHooks.make(requestAdapters: configuration.requestAdapters, eventMonitors: configuration.eventMonitors)
        self.mutableState = Lock(MutableState(defaultHeaders: DefaultHeaderValues.make()))
        self.reachability = Self.startReachability(for: baseURL, configuration: configuration, queue: operationQueue)
    }

    /// Creates a client without a base URL, for code that talks to full URLs (the connection
    /// samples AFNetworking replaced): every path must be an absolute `http(s)` URL, or the
    /// call fails with ``ConveyorError/invalidURL(path:baseURL:)`` before anything is sent.
    /// Nothing is watched for reachability (there is no host to watch).
    /// - Parameter configuration: Timeouts, concurrency, callback queue and session settings; default ``Configuration/default``.
    public init(configuration: Configuration = .default) {
        self.baseURL = nil
        self.pathResolver = nil
        self.resolvedURLs = nil
        self.credentialScope = CredentialScope(baseURL: nil, named: configuration.credentialOrigins)
        self.configuration = configuration
        self.operationQueue = Self.makeQueue(named: "absolute URLs", configuration: configuration)
        self.transport = TransportFactory.make(for: configuration)
        self.policyBoxes = (ColdBox(configuration.retryPolicy), ColdBox(configuration.redirectPolicy))
        self.hooks = ClientHooks.make(requestAdapters: configuration.requestAdapters, eventMonitors: configuration.eventMonitors)
        self.mutableState = Lock(MutableState(defaultHeaders: DefaultHeaderValues.make()))
        self.reachability = nil
    }

    private static func makeQueue(named name: String, configuration: Configuration) -> OperationQueue {
        let queue = OperationQueue()
        queue.name = "org.conveyor.client(\(name))"
        queue.maxConcurrentOperationCount = configuration.maximumConcurrentOperations
        return queue
    }

    deinit {
        reachability?.stopMonitoring()
        SentSecrets.shared.unpin(mutableState.withLock { $0.configuredSecrets })
        // The transport is not invalidated here: operations still queued or paused hold it and
        // run on it after their client is gone (invalidating a URLSession under them crashed the
        // process). It invalidates itself when the last of them releases it.
    }

    private static func normalized(_ url: URL) -> URL {
        guard !url.path.isEmpty, !url.absoluteString.hasSuffix("/"),
            var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else { return url }
        components.path += "/"
        return components.url ?? url
    }

    // MARK: - Default headers

    /// The headers copied onto every request the client builds. Starts with `Accept-Language`
    /// (the user's preferred languages) and `User-Agent` (the program, Conveyor, the OS).
    public var defaultHeaders: HTTPHeaders {
        mutableState.withLock { $0.defaultHeaders }
    }

    /// Sets or removes a default header.
    /// - Parameters:
    ///   - name: The header name (case-insensitive).
    ///   - value: The value; nil removes the header.
    public func setDefaultHeader(_ name: String, value: String?) {
        mutableState.withLock { state in
            state.defaultHeaders[name] = value
            state.pinConfiguredSecrets()
        }
    }

    /// The default value for a header name, if set.
    /// - Parameter name: The header name (case-insensitive).
    /// - Returns: The value, or nil.
    public func defaultValue(forHeader name: String) -> String? {
        mutableState.withLock { $0.defaultHeaders[name] }
    }

    /// How parameters are encoded into requests the client builds. Default ``RequestSerializer/formURLEncoded``.
    public var requestSerializer: any RequestSerializer {
        get { mutableState.withLock { $0.requestSerializer } }
        set { mutableState.withLock { $0.requestSerializer = newValue } }
    }

    // MARK: - Building requests

    /// Resolves `path` against ``baseURL``.
    /// - Parameter path: A relative path (`"users/1"`), an absolute path (`"/v2/users"`), or a
    ///   full `http(s)` URL (the only kind a client without a base URL takes) — or an
    ///   `http+unix` one (see ``isUnixSocketURL(_:)``).
    /// - Returns: The absolute URL.
    /// - Throws: ``ConveyorError/invalidURL(path:baseURL:)`` when the result is not an http(s)
    ///   or http(s)+unix URL.
    open func url(for path: String) throws -> URL {
        if let url = resolvedURLs?.url(for: path) { return url }
        guard let url = pathResolver.map({ $0.resolve(path) }) ?? URL(string: path), Self.isRequestURL(url) else {
            throw ConveyorError.invalidURL(path: path, baseURL: baseURL)
        }
        resolvedURLs?.store(url, for: path)
        return url
    }

    /// Whether a request may go to `url`: an `http(s)` or `http(s)+unix` URL with a host. The one
    /// rule for a client's paths and for what its request adapters return.
    static func isRequestURL(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" || UnixSocketURL.schemes[scheme] != nil,
            let host = url.host, !host.isEmpty
        else { return false }
        return true
    }

    /// Builds a request: the URL from `path`, the default headers (then `headers`), the
    /// configured idle timeout, and `parameters` encoded by `requestSerializer`.
    ///
    /// The verbs, the async calls, streams and every ``Outbox`` delivery build their requests
    /// here, so a subclass that overrides it adapts or signs all of them (AFNetworking's
    /// `requestWithMethod:path:parameters:`). For an outbox delivery it runs at each attempt,
    /// with the item's stored headers and a `requestSerializer` that attaches the stored body.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved with ``url(for:)``.
    ///   - parameters: Encoded into the query or body; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this request; nil uses it.
    /// - Returns: The request.
    /// - Throws: ``ConveyorError/invalidURL(path:baseURL:)`` or ``ConveyorError/parameterEncodingFailed(reason:)``.
    open func request(
        method: HTTPMethod, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil
    ) throws -> URLRequest {
        let (request, defaultSerializer) = try baseRequest(method: method, path: path, headers: headers)
        return try Self.wrappingEncoderErrors { try (requestSerializer ?? defaultSerializer).serialize(request, parameters: parameters) }
    }

    /// Builds a request whose body (or query, for the form serializer and `GET`) is an
    /// `Encodable` value.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved with ``url(for:)``.
    ///   - body: Encoded by the serializer (a JSON body with ``JSONRequestSerializer``).
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this request; nil uses it.
    /// - Returns: The request.
    /// - Throws: ``ConveyorError/invalidURL(path:baseURL:)`` or ``ConveyorError/parameterEncodingFailed(reason:)``.
    open func request<Value: Encodable>(
        method: HTTPMethod, path: String, body: Value, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil
    ) throws -> URLRequest {
        let (request, defaultSerializer) = try baseRequest(method: method, path: path, headers: headers)
        return try Self.wrappingEncoderErrors { try (requestSerializer ?? defaultSerializer).serialize(request, encodable: body) }
    }

    /// The one place a request is started: the URL from ``url(for:)``, the method, the idle
    /// timeout, then the default headers (unless `includingDefaults` is false) and `headers`.
    /// Every request the client builds comes from here, through
    /// ``request(method:path:parameters:headers:requestSerializer:)`` where a subclass may adapt
    /// it; the outbox asks for the request without the defaults when it writes an item (the
    /// defaults and credentials are added at each delivery, never stored).
    func baseRequest(
        method: HTTPMethod, path: String, headers: HTTPHeaders = [:], includingDefaults: Bool = true
    ) throws -> (URLRequest, any RequestSerializer) {
        var request = URLRequest(url: try url(for: path), timeoutInterval: configuration.idleTimeout)
        // A new request's method is already GET; setting it runs corelibs' normalisation, a
        // case-insensitive comparison with each known method (1 µs; 4 µs in a profile).
        if method != .get { request.httpMethod = method.rawValue }
        guard includingDefaults else {
            request.setHeaders(headers)
            return (request, requestSerializer)
        }
        var (fields, sharedFields, serializer) = mutableState.withLock {
            ($0.defaultHeaders, $0.defaultHeaderFields, $0.requestSerializer)
        }
        // Default credentials stay with their origin (a hostile `next` link in a paginated
        // answer must not collect the token); headers given for this request alone are the
        // caller's explicit choice and stay. The origin is only worked out (two lower-cased
        // copies) when a default credential header is there to withhold.
        let credentialNames = configuration.redirectPolicy.headersRemovedAcrossOrigins
        var withheld = false
        if credentialNames.contains(where: { fields[$0] != nil }), !credentialScope.contains(request.url) {
            for name in credentialNames { fields[name] = nil }
            withheld = true
        }
        if headers.count == 0 && !withheld {
            // The default fields unchanged: the request shares the client's dictionary.
            request.allHTTPHeaderFields = sharedFields
        } else {
            for (name, value) in headers { fields[name] = value }
            request.setHeaders(fields)
        }
        return (request, serializer)
    }

    static func wrappingEncoderErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ConveyorError {
            throw error
        } catch {
            throw ConveyorError.parameterEncodingFailed(reason: .encoderFailed(error))
        }
    }

    // MARK: - Operations

    /// Registers an operation class; ``operation(with:success:failure:)`` asks registered
    /// classes, newest first, whether they ``HTTPRequestOperation/canProcess(_:)`` a request.
    /// Registering a class again moves it to the front.
    /// - Parameter type: The class.
    public func register(_ type: HTTPRequestOperation.Type) {
        mutableState.withLock { state in
            state.registeredOperationClasses.removeAll { $0 == type }
            state.registeredOperationClasses.insert(type, at: 0)
        }
    }

    /// Removes a registered operation class.
    /// - Parameter type: The class.
    public func unregister(_ type: HTTPRequestOperation.Type) {
        mutableState.withLock { $0.registeredOperationClasses.removeAll { $0 == type } }
    }

    /// The registered operation classes, newest first.
    public var registeredOperationClasses: [HTTPRequestOperation.Type] {
        mutableState.withLock { $0.registeredOperationClasses }
    }

    /// Builds (but does not enqueue) an operation for `request`, of the newest registered
    /// class that can process it, or ``HTTPRequestOperation`` itself.
    /// - Parameters:
    ///   - request: The request.
    ///   - success: Run on the callback queue with the serialized value.
    ///   - failure: Run on the callback queue with the error.
    /// - Returns: The configured operation.
    open func operation(
        with request: URLRequest, success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        let classes = mutableState.withLock { $0.registeredOperationClasses }
        let type = classes.first { $0.canProcess(request) } ?? HTTPRequestOperation.self
        return operation(type, with: request, success: success, failure: failure)
    }

    /// Builds (but does not enqueue) an operation of exactly `type` for `request`, with this
    /// client's settings: its transport (and so its TLS authorities and pins), callback queue,
    /// cache, retry, redirect and resource-timeout policies and default credential.
    ///
    /// ```swift
    /// let operation = client.operation(JSONRequestOperation.self, with: request,
    ///     success: { _, json in print(json ?? "") }, failure: { _, error in print(error) })
    /// operation.outputStream = OutputStream(toFileAtPath: path, append: false)
    /// client.enqueue(operation)
    /// ```
    /// - Parameters:
    ///   - type: The operation class; registration plays no part.
    ///   - request: The request.
    ///   - success: Run on the callback queue with the serialized value; nil for none.
    ///   - failure: Run on the callback queue with the error; nil for none.
    /// - Returns: The configured operation.
    public func operation<Operation: HTTPRequestOperation>(
        _ type: Operation.Type, with request: URLRequest,
        success: HTTPRequestOperation.Success? = nil, failure: HTTPRequestOperation.Failure? = nil
    ) -> Operation {
        let operation = type.init(request: request)
        operation.adoptSettings(of: self)
        operation.setCompletionBlock(success: success, failure: failure)
        return operation
    }

    /// Adds an operation to ``operationQueue`` (AFNetworking's `enqueueHTTPRequestOperation:`).
    ///
    /// The operation runs with this client's settings — transport and TLS trust, callback
    /// queue, cache and cache policy, retry, redirect and resource-timeout policies, response
    /// size limit, challenge handler, default credential — for every setting that was not
    /// assigned on the operation itself. A setting assigned on the operation (even to its
    /// default value) wins, so an operation built directly with `init(request:)` behaves as if
    /// this client had built it, except where its owner said otherwise.
    /// - Parameter operation: The operation; built by this client or directly.
    /// - Precondition: The operation was never enqueued or started before: an operation runs
    ///   once. Enqueueing it again, on this client or another, stops the program with a message
    ///   naming it (Foundation's own trap said nothing useful).
    open func enqueue(_ operation: HTTPRequestOperation) {
        claim(operation)
        operationQueue.addOperation(operation)
    }

    /// Marks `operation` enqueued — once: a second time stops the program with a message naming
    /// it (Foundation's own trap said nothing useful) — and gives it this client's settings,
    /// unless this client built it (they were adopted then): settings are adopted once per
    /// operation, and the check shares the lock the enqueue mark takes.
    private func claim(_ operation: HTTPRequestOperation) {
        let (first, adopted) = operation.mutableState.withLock { ($0.transfer.enqueue(), $0.adoptedClient === self) }
        precondition(
            first,
            "HTTPClient.enqueue: the operation \(operation.debugName) was already enqueued or started; an operation runs once — make a new one"
        )
        if !adopted { operation.adoptSettings(of: self) }
    }

    /// Enqueues a stream's operation on the streams' own queue and transport (see
    /// ``StreamAllowance``): long-lived streams never hold the slots and connections ordinary
    /// requests wait for.
    func enqueueStream(_ operation: HTTPRequestOperation) {
        claim(operation)
        let transport = streams.transport(for: configuration)
        operation.mutableState.withLock { $0.transport = transport }
        streams.queue.addOperation(operation)
    }

    /// Cancels queued and running operations whose request matches; with no arguments, all of them.
    ///
    /// As in AFNetworking, the path is compared without its query: `cancelAllOperations(method: .get,
    /// path: "search")` cancels `search?q=a` and `search?q=b`. `cancelAllOperations(method: .post)`
    /// cancels every `POST`.
    /// - Parameters:
    ///   - method: The method to match; nil (the default) matches any.
    ///   - path: The path, resolved like ``request(method:path:parameters:headers:requestSerializer:)``; nil
    ///     (the default) matches any. A path that does not resolve matches nothing.
    public func cancelAllOperations(method: HTTPMethod? = nil, path: String? = nil) {
        let target: URL?
        if let path {
            guard let resolved = try? url(for: path) else { return }
            target = resolved
        } else {
            target = nil
        }
        let matching = (operationQueue.operations + streams.queue.operations).compactMap { operation -> HTTPRequestOperation? in
            guard let operation = operation as? HTTPRequestOperation else { return nil }
            let request = operation.request
            let methodMatches = method.map { $0.rawValue == (request.httpMethod ?? "GET").uppercased() } ?? true
            let pathMatches = target.map { request.url?.path == $0.path && Origin(request.url) == Origin($0) } ?? true
            return methodMatches && pathMatches ? operation : nil
        }
        // Queued operations first: cancelling a running one frees a slot, and a matching queued
        // one must not take it and reach the server before the sweep gets to it.
        for operation in matching where !operation.isExecuting { operation.cancel() }
        for operation in matching where !operation.isCancelled { operation.cancel() }
    }
}

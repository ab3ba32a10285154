import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request and its response, as an asynchronous `Operation`.
///
/// Add it to any `OperationQueue` (a client's ``HTTPClient/operationQueue`` usually), or call
/// `start()`. The operation sends ``request`` through its transport, follows redirects as its
/// ``redirectPolicy`` allows, validates the status code and content type, runs its
/// ``responseSerializer`` off the callback queue, then calls exactly one of the blocks set with
/// ``setCompletionBlock(success:failure:)`` on ``callbackQueue`` — exactly once, whether it
/// succeeded, failed, timed out or was cancelled before, during or after its transfer.
///
/// Subclasses (JSON, XML, property list, image, file download) set a different default
/// serializer and override ``canProcess(_:)`` so that ``HTTPClient`` picks them by request.
///
/// ## Settings assigned while it runs
///
/// The operation reads its settings once when it starts, and again when it resumes after
/// ``pause()``; every attempt in between — redirects, retries, a replay after a refreshed
/// credential — uses what was read then. So a setting assigned while the operation runs applies
/// from its next ``resume()``, never halfway through a run. Each is the value assigned on the
/// operation, else its client's, else the request's (`timeoutInterval` for ``idleTimeout``,
/// `cachePolicy` for ``cachePolicy``). The blocks are read when their event happens: the
/// completion blocks when it finishes, the progress, response-received and chunk blocks at each
/// event they report, and ``outputStream`` when the body of its response starts. The challenge
/// handler, the cache response block and a ``RedirectPolicy``'s handler are settings.
open class HTTPRequestOperation: Operation, @unchecked Sendable {
    // @unchecked Sendable: every mutable property lives in `mutableState`, behind one Mutex
    // (`transitionLock` guards no state: it only keeps lifecycle KVO notifications in order).

    /// Called with the operation and its serialized value (`Data` for the base class).
    public typealias Success = @Sendable (HTTPRequestOperation, Any?) -> Void
    /// Called with the operation and the reason it failed.
    public typealias Failure = @Sendable (HTTPRequestOperation, ConveyorError) -> Void
    /// Called with the bytes moved since the last call, the total so far, and the total
    /// expected (-1 when unknown).
    public typealias ProgressHandler = @Sendable (_ bytes: Int64, _ totalBytes: Int64, _ totalBytesExpected: Int64) -> Void

    /// The request the operation was created with.
    public let request: URLRequest

    let mutableState: Lock<MutableState>
    /// Serializes lifecycle transitions with their KVO notifications (check, willChange, set,
    /// didChange as one step). It guards no state — that is `mutableState` — but two threads
    /// racing (a cancel finishing a paused operation while another resumes it) must not
    /// interleave, or the queue hears "finished" for an operation left ready. Found by the
    /// stress test: corelibs' OperationQueue crashed in `_schedule()`.
    let transitionLock = Lock(())

    /// Creates an operation for `request`; it does nothing until started or enqueued.
    /// - Parameter request: The request to send.
    public required init(request: URLRequest) {
        self.request = request
        self.mutableState = Lock(MutableState(request: request))
        super.init()
    }

    /// Whether this class can handle `request`; ``HTTPClient`` asks registered classes, newest
    /// first, and uses the first that answers true.
    ///
    /// The base class accepts every request. A subclass accepts a request whose `Accept` header
    /// lists one of its ``processableContentTypes``, or whose URL path ends in one of its
    /// ``processablePathExtensions`` — as in AFNetworking. This is why a client with
    /// `JSONRequestOperation` registered still builds a plain operation for a request without
    /// `Accept: application/json`: set that default header (or use a `.json` URL).
    /// - Parameter request: The request about to be sent.
    /// - Returns: true when the class should be used for it.
    open class func canProcess(_ request: URLRequest) -> Bool {
        if self == HTTPRequestOperation.self { return true }
        let accepted = (request.value(forHTTPHeaderField: "Accept") ?? "").split(separator: ",").compactMap {
            $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        }
        if accepted.contains(where: { ContentTypes.matches($0, processableContentTypes) }) { return true }
        let pathExtension = (request.url?.path as NSString?)?.pathExtension.lowercased() ?? ""
        return !pathExtension.isEmpty && processablePathExtensions.contains(pathExtension)
    }

    /// The MIME types whose presence in `Accept` makes ``canProcess(_:)`` choose this class.
    /// Empty for the base class.
    open class var processableContentTypes: Set<String> { [] }

    /// The URL path extensions that make ``canProcess(_:)`` choose this class. Empty for the base class.
    open class var processablePathExtensions: Set<String> { [] }

    // MARK: - Operation

    /// Starts the transfer. Called by the operation queue; call it yourself only for an
    /// operation that is not in a queue.
    open override func start() { beginExecution() }

    /// Cancels the operation: the transfer stops and the failure block runs with
    /// ``ConveyorError/cancelled(reason:)``. Safe from any thread at any time; does nothing
    /// once the operation has finished.
    open override func cancel() {
        cancel(reason: .explicit)
    }

    /// Cancels with a reason the failure reports (`.shuttingDown` when a client drains).
    func cancel(reason: ConveyorError.CancellationReason) {
        guard !isFinished else { return }
        transfer { $0.cancelRequested(reason) }
        super.cancel()
        finishIfCancelledWhileExecuting()
    }

    /// Always true: the operation runs its transfer without blocking a queue thread.
    open override var isAsynchronous: Bool { true }
    /// Whether the transfer is under way.
    open override var isExecuting: Bool { state == .executing }
    /// Whether the operation has finished (the completion block has been scheduled).
    open override var isFinished: Bool { state == .finished }

    // MARK: - Hooks for subclasses (declared here: extension members cannot be overridden)

    /// Called when the head of the response the operation delivers arrives (not the heads of
    /// redirects it follows), before its body — AFNetworking subclasses overrode
    /// `connection:didReceiveResponse:` for this. A retried or resumed transfer calls it again
    /// for its new response.
    ///
    /// Runs on the transfer's executor (the transport's thread; see <doc:ThreadsAndQueues>), so
    /// keep it short and never block; the default does nothing, and an override need not call
    /// `super`.
    /// - Parameter response: The response head (``HTTPResponseHead/urlResponse`` is the Foundation one).
    open func didReceive(response: HTTPResponseHead) {}

    /// Called for each chunk of the delivered response's body as it arrives
    /// (`connection:didReceiveData:`), after the operation stored it. Runs on the transfer's
    /// executor, like ``didReceive(response:)``; the default does nothing.
    /// - Parameter data: The chunk.
    open func didReceive(data: Data) {}

    /// Called once when the operation finishes, however it ended, before its completion block
    /// is dispatched (`connectionDidFinishLoading:` and `connection:didFailWithError:` in one).
    /// Runs on the transfer's executor; the default does nothing.
    /// - Parameter error: Why it failed; nil when it succeeded.
    open func didFinish(error: ConveyorError?) {}

    // MARK: - Hooks for subclasses in this module

    /// Produces the success value. File downloads override it to move their file into place.
    func serializeResponse(
        request: URLRequest, response: HTTPResponseHead, data: Data, bodiless: Bool, serializer: any ResponseSerializer
    ) throws -> Any? {
        bodiless
            ? try serializer.emptyResponseValue(request: request, response: response)
            : try serializer.serialize(request: request, response: response, data: data)
    }

    /// The operation finished with an error (called once, after the partial body file was
    /// discarded and before the completion is scheduled). File downloads remove what they made.
    func transferFailed() {}

    /// ``serializeResponse(request:response:data:bodiless:serializer:)`` produced `value`, but
    /// the completion had been claimed meanwhile (a cancel or a timeout won): undo what making
    /// the value did. File downloads remove the file they moved into place.
    func successNotDelivered(_ value: Any?) {}

    /// Where the body of `response` goes: nil keeps it in memory (the default); file
    /// downloads return a file for responses they will keep — those the operation `stores`
    /// (an acceptable status, not a redirect to follow). `partialFile` is the file a resumed transfer appends to
    /// (a 206 continuing a paused or interrupted download).
    func makeBodyFile(for response: HTTPResponseHead, appendingTo partialFile: URL?, stores: Bool) throws -> ResponseBodyFile? { nil }

    // MARK: - Configuration

    // The settings below documented as "Default: the client's" come from the client that
    // builds or enqueues the operation (see `adoptSettings(of:)`) unless assigned here first.
    // The transfer reads them as resolved at start and at each resume (`ResolvedSettings`):
    // assigned while it runs, they apply from the next resume (the rule in the type's docs).

    /// The queue the completion blocks run on. Default: the client's callback queue, or
    /// `DispatchQueue.conveyorDefaultCallbackQueue` for an operation no client built or enqueued.
    public var callbackQueue: DispatchQueue {
        get { read(\.callbackQueue) }
        set { assign(\.callbackQueue, newValue, as: .callbackQueue) }
    }

    /// Status codes that count as success. Default `200..<300`.
    public var acceptableStatusCodes: IndexSet {
        get { read(\.acceptableStatusCodes) }
        set { write(\.acceptableStatusCodes, newValue) }
    }

    /// MIME types (without parameters; `type/*`, `*/*` and `+json`-style suffixes allowed) a
    /// non-empty body must have. Reads the value set on this operation, else the
    /// ``responseSerializer``'s (`nil`, any type, for the base class's data serializer).
    /// Setting nil returns to the serializer's; set `["*/*"]` to accept anything.
    public var acceptableContentTypes: Set<String>? {
        get { read(\.effectiveAcceptableContentTypes) }
        set { write(\.acceptableContentTypes, newValue?.lowercasedSet) }
    }

    /// Turns the validated body into the value passed to the success block. Default ``ResponseSerializer/data``.
    public var responseSerializer: any ResponseSerializer {
        get { read(\.responseSerializer) }
        set { write(\.responseSerializer, newValue) }
    }

    /// Decides how authentication challenges are answered before ``credential`` is tried;
    /// nil (the default, or the client's) uses ``credential`` alone. See ``AuthenticationChallengeHandler``.
    public var authenticationChallengeHandler: AuthenticationChallengeHandler? {
        get { read(\.challengeHandler) }
        set { assign(\.challengeHandler, newValue, as: .challengeHandler) }
    }

    /// When the operation sends failed attempts again. Default: the client's, or ``RetryPolicy/none``.
    public var retryPolicy: RetryPolicy {
        get { read(\.retryPolicy) }
        set { assign(\.retryPolicy, newValue, as: .retryPolicy) }
    }

    /// Seconds without a byte moving before the operation fails with
    /// ``ConveyorError/timedOut(_:after:)`` (`.idle`, naming this value); fractions are
    /// honoured. It is the one idle timeout of the transfer on both transports: URLSession's
    /// own timer is set behind it. Default the request's `timeoutInterval` (the client sets it
    /// from its configuration). Assigned while the operation runs, it applies from its next
    /// ``resume()``.
    public var idleTimeout: TimeInterval {
        get { read(\.idleTimeout) }
        set { write(\.idleTimeout, newValue) }
    }

    /// Seconds one attempt (its redirects included) may take before it fails with
    /// ``ConveyorError/timedOut(_:after:)`` (`.resource`); nil for no limit. Like every
    /// failure, the timeout goes to the ``retryPolicy``; a retried attempt gets the whole budget
    /// again. No clock runs while paused or while the retry policy's `decide` is pending.
    /// Default: the client's ``HTTPClient/Configuration/resourceTimeout``.
    public var resourceTimeout: TimeInterval? {
        get { read(\.resourceTimeout) }
        set { assign(\.resourceTimeout, newValue, as: .resourceTimeout) }
    }

    /// The credential used to answer an authentication challenge. Default: the client's
    /// ``HTTPClient/defaultCredential``. A challenge that this credential fails (or that comes
    /// when there is none) fails the operation with ``ConveyorError/authenticationFailed(response:data:)``.
    public var credential: URLCredential? {
        get { read(\.credential.value) }
        set { assign(\.credential, LockedReference(newValue), as: .credential) }
    }

    /// Stamps a credential on every attempt and refreshes it when it expires or is refused
    /// (see ``Authenticator``). Default: the client's ``HTTPClient/Configuration/authenticator``.
    /// Assign nil to send one request without it — the token request of a refresh sent through
    /// the same client, say.
    public var authenticator: (any Authenticator)? {
        get { read(\.authenticator) }
        set { assign(\.authenticator, newValue, as: .authenticator) }
    }

    /// Which redirects are followed. Default: the client's, or ``RedirectPolicy/default``.
    public var redirectPolicy: RedirectPolicy {
        get { read(\.redirectPolicy) }
        set { assign(\.redirectPolicy, newValue, as: .redirectPolicy) }
    }

    /// The default of ``maximumResponseSize``: 100 MB.
    public static let defaultMaximumResponseSize: Int64 = 100_000_000

    /// The most bytes a response body kept in memory may have; nil for no limit. A larger
    /// announced `Content-Length` fails with ``ConveyorError/responseTooLarge(limit:response:)``
    /// before the body is read; a body that grows past it while arriving (chunked, or
    /// decompressed from a small gzip) fails as soon as it does, whatever the status (a 401 or
    /// 407 included). Bodies written to a file (a ``FileDownloadOperation``'s accepted response)
    /// are not limited; a download's error body (a 401, a 500), kept in memory, is. Default: the client's
    /// ``HTTPClient/Configuration/maximumResponseSize``, or 100 MB.
    public var maximumResponseSize: Int64? {
        get { read(\.maximumResponseSize) }
        set { assign(\.maximumResponseSize, newValue, as: .maximumResponseSize) }
    }

    /// The HTTP cache the operation reads and writes. Default: the client's
    /// ``HTTPClient/Configuration/cache``, or nil (no caching) for an operation no client built or enqueued.
    public var cache: HTTPCache? {
        get { read(\.cache) }
        set { assign(\.cache, newValue, as: .cache) }
    }

    /// How the operation uses ``cache``. Reads the policy set here, else the request's
    /// `cachePolicy` when it is not `.useProtocolCachePolicy`, else the client's
    /// ``HTTPClient/Configuration/cachePolicy``.
    public var cachePolicy: HTTPCache.Policy {
        get { mutableState.withLock { $0.effectiveCachePolicy(for: request) } }
        set { write(\.cachePolicy, newValue) }
    }

    /// Where the response came from: the network, or the cache (see ``HTTPCache/ResponseSource``).
    public var responseSource: HTTPCache.ResponseSource { transfer { $0.responseSource } }

    /// Sets the block that sees each response before ``cache`` stores it, as AFNetworking's
    /// `setCacheResponseBlock:`: return it (changed or not) to store it, nil to refuse it.
    /// - Parameter block: The block; nil stores responses as they are.
    public func setCacheResponseBlock(_ block: CacheResponseHandler?) {
        write(\.cacheResponseHandler, block)
    }

    /// Where the response body goes instead of memory, as AFNetworking's `outputStream`: the
    /// operation opens the stream (unless it is open already) when the body of an accepted
    /// response starts, writes each chunk as it arrives, and closes the stream when it
    /// finishes, however it ends.
    ///
    /// ```swift
    /// let operation = HTTPRequestOperation(request: request)
    /// operation.outputStream = OutputStream(toFileAtPath: path, append: false)
    /// client.enqueue(operation)
    /// ```
    ///
    /// ``responseData`` stays empty unless the stream is a memory stream
    /// (`OutputStream.toMemory()`), whose contents the ``responseSerializer`` then reads; for
    /// other streams the success value is the serializer's empty value (nil when it has none).
    /// Bodies of rejected statuses stay in memory, so the error carries them; bodies of
    /// followed redirects are not written. A stream that cannot be opened or refuses bytes (a
    /// full disk, a closed stream) fails the operation at once with
    /// ``ConveyorError/outputStreamFailed(reason:)``; what it accepted stays written. A pause,
    /// or a retry after a dropped connection, continues with a `Range` request and appends; a
    /// server that sends the body from the start again fails with
    /// ``ConveyorError/OutputStreamFailureReason/cannotRestart(bytesWritten:)``, since a stream
    /// cannot be rewound. Set it before the operation starts; ``maximumResponseSize`` does not
    /// apply. Default nil.
    public var outputStream: OutputStream? {
        get { read(\.outputSink)?.stream }
        set { write(\.outputSink, newValue.map(OutputStreamSink.init)) }
    }

    /// Free-form values for the caller's own bookkeeping.
    public var userInfo: [String: any Sendable] {
        get { read(\.userInfo) }
        set { write(\.userInfo, newValue) }
    }

}

extension HTTPRequestOperation {
    /// `GET http://host/path` with secrets redacted, for messages that name the operation.
    var debugName: String {
        "\(request.httpMethod ?? "GET") \(request.url.map { ConveyorError.redaction.url($0) } ?? "(no URL)")"
    }
}

extension Set where Element == String {
    var lowercasedSet: Set<String> { Set(map { $0.lowercased() }) }
}

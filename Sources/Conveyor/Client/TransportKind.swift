extension HTTPClient {
    /// The machinery that sends a client's requests (``Configuration/transport``). Both
    /// behave the same — redirects, cookies, the cache, timeouts, progress, pause/resume,
    /// authentication and errors are Conveyor's on either.
    public enum TransportKind: String, Sendable, CaseIterable {
        /// libcurl on Linux when it loads (it is the library FoundationNetworking itself uses),
        /// URLSession otherwise and on Apple platforms. URLSession is also chosen when the
        /// session configuration registers its own `URLProtocol` classes (such as
        /// `StubURLProtocol`), which only URLSession consults. The environment variable
        /// `CONVEYOR_TRANSPORT` (`curl` or `urlsession`) overrides the choice.
        case automatic
        /// Foundation's `URLSession`.
        case urlSession
        /// libcurl's multi interface, driven by Conveyor with one thread per client (Linux only;
        /// elsewhere, or when libcurl cannot be loaded, URLSession is used and a note is
        /// printed to standard error once).
        case curl
    }
}

extension HTTPClient {
    /// The transport this client's requests go through: ``TransportKind/curl`` or
    /// ``TransportKind/urlSession``, never ``TransportKind/automatic``. It is what
    /// ``Configuration/transport`` resolved to when the client was created — `.automatic`'s
    /// choice, the `CONVEYOR_TRANSPORT` environment variable's, or URLSession when `.curl` was
    /// asked for and libcurl could not be loaded.
    public var resolvedTransport: TransportKind {
        #if os(Linux)
            if transport is CurlTransport { return .curl }
        #endif
        return .urlSession
    }
}

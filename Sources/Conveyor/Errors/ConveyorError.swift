import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one error type Conveyor reports.
///
/// Every case carries what a caller needs to debug the failure: the offending path or
/// parameters, the response and its body, or the underlying system error. `description`
/// reads as a sentence, so `print(error)` is useful on its own.
public enum ConveyorError: Error, Sendable {
    /// A path could not be turned into a URL relative to the client's base URL.
    case invalidURL(path: String, baseURL: URL?)
    /// The parameters could not be encoded into the request.
    case parameterEncodingFailed(reason: ParameterEncodingFailureReason)
    /// A multipart body could not be built: a file is missing, unreadable or a directory, a
    /// stream ended early, or the temporary body file could not be written.
    case multipartEncodingFailed(reason: MultipartEncodingFailureReason)
    /// A download could not be written to, or moved to, its destination file.
    case downloadFailed(reason: DownloadFailureReason)
    /// The operation's ``HTTPRequestOperation/outputStream`` could not be opened or refused
    /// bytes (a full disk, a closed stream, an unopenable path). Bytes it accepted stay written.
    case outputStreamFailed(reason: OutputStreamFailureReason)
    /// The server answered with a status code outside the operation's acceptable set.
    case unacceptableStatusCode(Int, response: HTTPURLResponse, data: Data?)
    /// The response's `Content-Type` is not one the operation accepts.
    case unacceptableContentType(String?, acceptable: Set<String>, response: HTTPURLResponse, data: Data?)
    /// The body arrived but could not be turned into the requested value.
    case responseSerializationFailed(underlying: any Error, response: HTTPURLResponse?, data: Data?)
    /// The operation was cancelled before it finished.
    case cancelled(reason: CancellationReason)
    /// A time limit passed before the transfer finished.
    case timedOut(TimeoutKind, after: TimeInterval)
    /// The transfer failed below HTTP: connection refused or lost, DNS, TLS and the like.
    case network(URLError)
    /// The server demanded credentials and none, or wrong ones, were available.
    ///
    /// On Linux the body of a 401 whose challenge was refused is not delivered by
    /// URLSession, so `data` may be nil even when the server sent one.
    case authenticationFailed(response: HTTPURLResponse?, data: Data?)
    /// More redirects were followed than the configuration allows, or a redirect was unusable.
    case redirectFailed(reason: RedirectFailureReason)
    /// A body kept in memory would exceed ``HTTPRequestOperation/maximumResponseSize``: the
    /// announced `Content-Length` is larger (failing before the body is read), or the bytes
    /// received — after decompression — passed it. Download to a file for large bodies.
    case responseTooLarge(limit: Int64, response: HTTPURLResponse)
    /// The server answered `206 Partial Content` to a request that carried no `Range`: a part
    /// is not the resource, so it is never a success. A resumed download that sent the whole
    /// request again after refusing a 206 that did not continue its bytes fails so when the
    /// server answers with a part once more; a request whose caller set `Range` gets its 206.
    case partialContentNotRequested(response: HTTPURLResponse)
    /// The server's TLS certificate was not trusted (self-signed, unknown CA, expired, wrong
    /// host). `reason` is the TLS library's explanation. Validation is never off by default.
    case serverTrustFailed(host: String, reason: String)
    /// A header name or value contains CR, LF or NUL (or the name is not an HTTP token), which
    /// could inject other headers; the request was not sent.
    case invalidHeader(name: String)
    /// The request method is not an RFC 9110 token (letters, digits and the punctuation
    /// `tchar` allows): one with a space, CR or LF could inject headers or a second request.
    /// Nothing was sent.
    case invalidMethod(String)
    /// The client's ``Authenticator`` could not get a new credential; every operation that was
    /// waiting for it fails with this.
    case credentialRefreshFailed(reason: CredentialRefreshFailureReason)
    /// One of the client's ``RequestAdapter``s threw: nothing was sent.
    case requestAdaptationFailed(underlying: any Error)
    /// A streamed body (``HTTPStream``, its lines, ``ServerSentEvents``) could not go on: a line or
    /// an event passed its size limit, the stream was iterated a second time, or reconnection
    /// gave up.
    case streamFailed(reason: StreamFailureReason)
    /// An ``Outbox`` could not accept, keep or deliver an item: its directory is in use or
    /// unwritable, a limit or a full disk refused a new item, an item's file was corrupt, or an
    /// item ran out of attempts or time. Items already accepted are never harmed by a refusal.
    case outboxFailed(reason: OutboxFailureReason)
    /// The file given as a request body
    /// (``HTTPClient/request(method:path:bodyFile:headers:)``, or a multipart body Conveyor wrote
    /// to a file) is not a `file:` URL, missing, a directory, unreadable or not a regular file;
    /// it changed after the request was built; or the request's framing fields contradict its
    /// length. Nothing was sent — or, for a file that changed during the upload, the body was
    /// cut short before its last byte, so the server never received a whole request.
    case bodyFileFailed(reason: BodyFileFailureReason)
    /// The client's way to its servers — its proxy (``HTTPClient/Configuration/proxy``), Unix
    /// domain socket (``HTTPClient/Configuration/unixSocketPath`` or an `http+unix` URL) or
    /// address overrides (``HTTPClient/Configuration/resolve``) — is malformed, unusable, or
    /// not one the transport can take. Nothing reached the server.
    case routeFailed(reason: RouteFailureReason)

    /// Why a file could not be a request body.
    public enum BodyFileFailureReason: Sendable, CustomStringConvertible {
        /// The URL is not a `file:` URL.
        case notAFileURL(URL)
        /// No file exists at the URL.
        case fileNotFound(URL)
        /// The URL names a directory.
        case fileIsDirectory(URL)
        /// The file exists but cannot be read.
        case fileNotReadable(URL)
        /// The URL names a FIFO, a device (`/dev/zero`), a socket: something whose length is
        /// not a fact that a `Content-Length` could announce.
        case notARegularFile(URL)
        /// The file is not the one the request was built with: its size, modification time or
        /// inode differ (it grew, shrank, was rewritten or replaced), before or during the upload.
        case fileChanged(URL)
        /// The request's `field` contradicts the file's exact length: a `Transfer-Encoding`
        /// (RFC 9112 §6.1 forbids it beside `Content-Length`), or a `Content-Length` that is not
        /// the file's size when the request was built.
        case framingConflict(URL, field: String)

        /// A readable explanation naming the file.
        public var description: String {
            switch self {
            case .notAFileURL(let url): return "\(url.absoluteString) is not a file URL"
            case .fileNotFound(let url): return "no file at \(url.path)"
            case .fileIsDirectory(let url): return "\(url.path) is a directory"
            case .fileNotReadable(let url): return "\(url.path) cannot be read"
            case .notARegularFile(let url): return "\(url.path) is not a regular file"
            case .fileChanged(let url):
                return "\(url.path) changed after the request was built (its size, modification time or inode differ)"
            case .framingConflict(let url, let field):
                return "the request's \(field) field contradicts the exact length of \(url.path)"
            }
        }
    }

    /// Why an outbox refused an item or gave one up.
    public enum OutboxFailureReason: Sendable, CustomStringConvertible {
        /// Another ``Outbox`` (in this process or another) holds the directory: two would
        /// deliver the same items twice and race on their files.
        case directoryInUse(URL)
        /// The directory or one of its files could not be created, written or synced (a full
        /// disk, a read-only file system, permissions). Nothing was accepted.
        case writeFailed(URL, any Error)
        /// Accepting the item would pass ``Outbox/Configuration/maximumItemCount``.
        case itemLimitReached(limit: Int)
        /// Accepting the item's `bytes` would pass ``Outbox/Configuration/maximumBytes``.
        case byteLimitReached(limit: Int64, bytes: Int64)
        /// The file given as a body is missing, unreadable or a directory.
        case bodyFileUnreadable(URL)
        /// An item's file could not be read back (truncated, not an item, its body missing or
        /// short); it was moved to `movedTo` and the other items go on.
        case corruptItem(movedTo: URL, detail: String)
        /// The item was older than ``Outbox/Configuration/maximumAge`` before it could be
        /// delivered; it is kept as a dead letter.
        case expired(age: TimeInterval)
        /// The item used up ``Outbox/Configuration/maximumAttempts``; it is kept as a dead
        /// letter. `lastError` is the last attempt's failure.
        case attemptsExhausted(attempts: Int, lastError: any Error)
        /// The outbox was closed; it accepts nothing more.
        case closed
        /// No dead letter has this identifier.
        case noSuchItem(UUID)

        /// A readable explanation.
        public var description: String {
            switch self {
            case .directoryInUse(let url): return "\(url.path) is in use by another outbox"
            case .writeFailed(let url, let error): return "could not write \(url.path): \(error.localizedDescription)"
            case .itemLimitReached(let limit): return "the outbox holds its limit of \(limit) items"
            case .byteLimitReached(let limit, let bytes): return "\(bytes) more bytes would pass the outbox's limit of \(limit)"
            case .bodyFileUnreadable(let url): return "the body file \(url.path) is missing, unreadable or a directory"
            case .corruptItem(let url, let detail): return "a corrupt item file was moved to \(url.path) (\(detail))"
            case .expired(let age): return "the item was \(Seconds.wholeSeconds(age)) s old, older than the outbox keeps trying"
            case .attemptsExhausted(let attempts, let error): return "gave up after \(attempts) attempts (last: \(error))"
            case .closed: return "the outbox is closed"
            case .noSuchItem(let id): return "no dead letter has the identifier \(id.uuidString)"
            }
        }
    }

    /// Why a stream ended with an error.
    public enum StreamFailureReason: Sendable, CustomStringConvertible {
        /// A line of ``HTTPStream/lines`` was longer than `limit` bytes (without its line end).
        case lineTooLong(limit: Int)
        /// A Server-Sent Event's `data` was larger than `limit` bytes, or a line of the stream
        /// was longer than ``ServerSentEvents/maximumLineLength`` (`limit` plus
        /// ``ServerSentEvents/lineAllowance``).
        case eventTooLarge(limit: Int)
        /// The stream had already been iterated: a stream has one consumer, and a second
        /// iterator fails at once rather than wait for chunks that go to the first.
        case alreadyIterated
        /// ``ServerSentEvents`` stopped reconnecting after `attempts` consecutive connections
        /// that failed or delivered no event; `lastError` is the last failure, nil when the
        /// server closed the connection cleanly.
        case reconnectionGaveUp(attempts: Int, lastError: (any Error)?)

        /// A readable explanation.
        public var description: String {
            switch self {
            case .lineTooLong(let limit): return "a line was longer than \(limit) bytes"
            case .eventTooLarge(let limit): return "an event was larger than \(limit) bytes"
            case .alreadyIterated: return "the stream is already being iterated; a stream has one consumer"
            case .reconnectionGaveUp(let attempts, let error):
                return "gave up after \(attempts) consecutive failed connections\(error.map { " (last: \($0))" } ?? "")"
            }
        }
    }

    /// Why parameters could not be encoded.
    public enum ParameterEncodingFailureReason: Sendable, CustomStringConvertible {
        /// A value of a type the serializer cannot represent (for example NaN in JSON).
        case unsupportedValue(key: String, type: String)
        /// The underlying encoder threw.
        case encoderFailed(any Error)
        /// The request has no URL to put a query string on.
        case missingURL

        /// A readable explanation.
        public var description: String {
            switch self {
            case .unsupportedValue(let key, let type):
                return "the value for \"\(key)\" has type \(type), which this serializer cannot encode"
            case .encoderFailed(let error): return "the encoder failed: \(error)"
            case .missingURL: return "the request has no URL"
            }
        }
    }

    /// Why a multipart body could not be built.
    public enum MultipartEncodingFailureReason: Sendable, CustomStringConvertible {
        /// The URL given as a file is not a `file:` URL.
        case notAFileURL(URL)
        /// No file exists at the URL.
        case fileNotFound(URL)
        /// The URL names a directory.
        case fileIsDirectory(URL)
        /// The file exists but cannot be read.
        case fileNotReadable(URL)
        /// A file or stream part delivered fewer bytes than announced, or reading failed.
        case partReadFailed(name: String, expected: Int64, read: Int64)
        /// The temporary body file could not be written (disk full, permissions).
        case bodyFileWriteFailed(URL, any Error)

        /// A readable explanation naming the file.
        public var description: String {
            switch self {
            case .notAFileURL(let url): return "\(url.absoluteString) is not a file URL"
            case .fileNotFound(let url): return "no file at \(url.path)"
            case .fileIsDirectory(let url): return "\(url.path) is a directory, not a file"
            case .fileNotReadable(let url): return "\(url.path) is not readable"
            case .partReadFailed(let name, let expected, let read): return "part \"\(name)\" delivered \(read) of \(expected) bytes"
            case .bodyFileWriteFailed(let url, let error): return "could not write the body file \(url.path): \(error)"
            }
        }
    }

    /// Why a download could not be stored.
    public enum DownloadFailureReason: Sendable, CustomStringConvertible {
        /// The partial file next to the destination could not be created (read-only or missing directory).
        case cannotCreateFile(URL, any Error)
        /// Writing a chunk failed (disk full, I/O error); the partial file was removed.
        case writeFailed(URL, any Error)
        /// Something already exists at the destination and replacing it was not allowed (or it
        /// is a directory or a symbolic link, which is never replaced).
        case destinationExists(URL)
        /// The finished download could not be moved to the destination.
        case cannotMoveFile(to: URL, any Error)

        /// A readable explanation naming the path.
        public var description: String {
            switch self {
            case .cannotCreateFile(let url, let error): return "cannot create \(url.path): \(error.localizedDescription)"
            case .writeFailed(let url, let error): return "writing \(url.path) failed: \(error.localizedDescription)"
            case .destinationExists(let url):
                return "\(url.path) already exists (.removePreviousFile replaces a regular file; directories and links are never replaced)"
            case .cannotMoveFile(let url, let error): return "cannot move the download to \(url.path): \(error.localizedDescription)"
            }
        }
    }

    /// Why a credential refresh failed.
    public enum CredentialRefreshFailureReason: Sendable, CustomStringConvertible {
        /// The refresh threw this error (the token endpoint refused, the network failed, …).
        case refreshFailed(any Error)
        /// The refresh took longer than the authenticator's timeout.
        case timedOut(after: TimeInterval)
        /// The refresh returned a credential that had already expired: sending it would be
        /// refused and refreshing again at once would loop.
        case expiredOnArrival(expiresAt: Date)
        /// The refreshes succeeded, yet the authenticator still had no credential to send for
        /// this attempt (its credential kept expiring before it could be used).
        case noUsableCredential(refreshes: Int)

        /// A readable explanation.
        public var description: String {
            switch self {
            case .refreshFailed(let error): return "the refresh failed: \(error)"
            case .timedOut(let seconds): return "the refresh took longer than \(String(format: "%.3g", seconds)) s"
            case .expiredOnArrival(let expiry):
                return "the refresh returned a credential that had already expired (at \(ISO8601DateFormatter().string(from: expiry)))"
            case .noUsableCredential(let refreshes):
                return "after \(refreshes) refreshes the authenticator still had no credential to send"
            }
        }
    }

    /// Why an output stream failed.
    public enum OutputStreamFailureReason: Sendable, CustomStringConvertible {
        /// The stream could not be opened; the stream's error, when it reported one.
        case cannotOpen((any Error)?)
        /// The stream refused bytes after accepting `bytesWritten` of them; its error, when it
        /// reported one (none for a stream that was closed or is full at a fixed capacity).
        case writeFailed(bytesWritten: Int64, (any Error)?)
        /// The server sent the body again from its start (a retry or resume it could not
        /// continue), and the `bytesWritten` bytes already in the stream cannot be taken back.
        case cannotRestart(bytesWritten: Int64)

        /// A readable explanation.
        public var description: String {
            switch self {
            case .cannotOpen(let error): return "the output stream could not be opened\(error.map { ": \($0.localizedDescription)" } ?? "")"
            case .writeFailed(let count, let error):
                return
                    "the output stream refused bytes after \(count)\(error.map { ": \($0.localizedDescription)" } ?? " (closed, or full)")"
            case .cannotRestart(let count):
                return "the server restarted the body, but \(count) bytes are already in the output stream, which cannot be rewound"
            }
        }
    }

    /// Why an operation was cancelled.
    public enum CancellationReason: Sendable, Equatable, CustomStringConvertible {
        /// `cancel()` was called on the operation, its queue or its client, or the awaiting Task was cancelled.
        case explicit
        /// The client is draining for shutdown (``HTTPClient/drain(timeout:queued:completionGrace:)``): the
        /// operation was still queued, or still running when the timeout passed.
        case shuttingDown

        /// A readable explanation.
        public var description: String {
            switch self {
            case .explicit: return "cancelled by the caller"
            case .shuttingDown: return "the client is shutting down"
            }
        }
    }

    /// Which time limit fired.
    public enum TimeoutKind: Sendable, Equatable, CustomStringConvertible {
        /// No bytes moved for the idle timeout.
        case idle
        /// The whole transfer took longer than the resource timeout.
        case resource

        /// A readable explanation.
        public var description: String {
            switch self {
            case .idle: return "no data arrived"
            case .resource: return "the whole transfer took longer than"
            }
        }
    }

    /// Why a redirect could not be followed.
    public enum RedirectFailureReason: Sendable, CustomStringConvertible {
        /// The chain was longer than the configured maximum.
        case tooManyRedirects(max: Int, response: HTTPURLResponse)
        /// The `Location` header was missing or not a usable HTTP(S) URL.
        case invalidLocation(String?, response: HTTPURLResponse)

        /// A readable explanation.
        public var description: String {
            switch self {
            case .tooManyRedirects(let max, let response):
                return "more than \(max) redirects (last: \(response.statusCode) from \(ConveyorError.redaction.url(response.url)))"
            case .invalidLocation(nil, let response):
                return "the \(response.statusCode) redirect has no Location header"
            case .invalidLocation(let location?, let response):
                return
                    "the \(response.statusCode) redirect's Location \"\(ConveyorError.redaction.location(location))\" is not an http(s) URL"
            }
        }
    }
}

extension ConveyorError {
    /// The HTTP response involved in the failure, when there was one.
    public var response: HTTPURLResponse? {
        switch self {
        case .unacceptableStatusCode(_, let response, _), .unacceptableContentType(_, _, let response, _):
            return response
        case .responseSerializationFailed(_, let response, _), .authenticationFailed(let response, _):
            return response
        case .redirectFailed(.tooManyRedirects(_, let response)), .redirectFailed(.invalidLocation(_, let response)):
            return response
        case .responseTooLarge(_, let response), .partialContentNotRequested(let response):
            return response
        case .invalidURL, .parameterEncodingFailed, .multipartEncodingFailed, .downloadFailed, .outputStreamFailed, .cancelled, .timedOut,
            .network, .serverTrustFailed, .invalidHeader, .invalidMethod, .credentialRefreshFailed, .streamFailed, .outboxFailed,
            .bodyFileFailed, .requestAdaptationFailed, .routeFailed:
            return nil
        }
    }

    /// The response body received before the failure, when there was one.
    public var responseData: Data? {
        switch self {
        case .unacceptableStatusCode(_, _, let data), .unacceptableContentType(_, _, _, let data):
            return data
        case .responseSerializationFailed(_, _, let data), .authenticationFailed(_, let data):
            return data
        case .invalidURL, .parameterEncodingFailed, .multipartEncodingFailed, .downloadFailed, .outputStreamFailed, .cancelled, .timedOut,
            .network, .redirectFailed, .responseTooLarge, .partialContentNotRequested, .serverTrustFailed, .invalidHeader, .invalidMethod,
            .credentialRefreshFailed,
            .streamFailed, .outboxFailed, .bodyFileFailed, .requestAdaptationFailed, .routeFailed:
            return nil
        }
    }

    /// The lower-level error behind this one, if any.
    public var underlyingError: (any Error)? {
        switch self {
        case .responseSerializationFailed(let underlying, _, _): return underlying
        case .parameterEncodingFailed(.encoderFailed(let underlying)): return underlying
        case .multipartEncodingFailed(.bodyFileWriteFailed(_, let underlying)): return underlying
        case .downloadFailed(.cannotCreateFile(_, let underlying)), .downloadFailed(.writeFailed(_, let underlying)),
            .downloadFailed(.cannotMoveFile(_, let underlying)):
            return underlying
        case .outputStreamFailed(.cannotOpen(let underlying?)), .outputStreamFailed(.writeFailed(_, let underlying?)):
            return underlying
        case .credentialRefreshFailed(.refreshFailed(let underlying)): return underlying
        case .requestAdaptationFailed(let underlying): return underlying
        case .streamFailed(.reconnectionGaveUp(_, let underlying?)): return underlying
        case .outboxFailed(.writeFailed(_, let underlying)), .outboxFailed(.attemptsExhausted(_, let underlying)): return underlying
        case .network(let error), .routeFailed(.proxyUnreachable(_, let error)): return error
        default: return nil
        }
    }

    /// The HTTP status code of the response involved, if any.
    public var statusCode: Int? { response?.statusCode }

    /// Whether the failure is a cancellation.
    public var isCancelled: Bool { if case .cancelled = self { return true } else { return false } }

    /// Whether a time limit fired.
    public var isTimeout: Bool { if case .timedOut = self { return true } else { return false } }
}

extension ConveyorError: CustomStringConvertible, CustomDebugStringConvertible, LocalizedError {
    /// The same redacted sentence as ``description``: `String(reflecting:)` and `debugPrint`
    /// would otherwise print the cases' raw URLs and bodies, secrets included.
    public var debugDescription: String { description }

    /// A readable sentence describing the failure, including a short preview of any body.
    /// Secrets are hidden by name and — credentials Conveyor sent — by value.
    public var description: String { Self.redaction.masked(unmaskedDescription) }

    private var unmaskedDescription: String {
        switch self {
        case .invalidURL(let path, let baseURL):
            return
                "Invalid URL: \"\(Self.redaction.location(path))\" cannot be resolved against \(baseURL.map { Self.redaction.url($0) } ?? "no base URL")."
        case .parameterEncodingFailed(let reason):
            return "Parameter encoding failed: \(reason)."
        case .multipartEncodingFailed(let reason):
            return "Multipart encoding failed: \(reason)."
        case .downloadFailed(let reason):
            return "Download failed: \(reason)."
        case .outputStreamFailed(let reason):
            return "Output stream failed: \(reason)."
        case .unacceptableStatusCode(let code, let response, let data):
            return
                "Request failed: unacceptable status code \(code) (\(HTTPURLResponse.localizedString(forStatusCode: code))) from \(Self.describe(response))\(Self.preview(data))."
        case .unacceptableContentType(let type, let acceptable, let response, let data):
            return
                "Request failed: unacceptable content type \(type ?? "(none)") from \(Self.describe(response)); acceptable: \(acceptable.sorted().joined(separator: ", "))\(Self.preview(data))."
        case .responseSerializationFailed(let underlying, let response, let data):
            return "Response serialization failed for \(response.map(Self.describe) ?? "a response"): \(underlying)\(Self.preview(data))."
        case .cancelled(let reason):
            return "The operation was cancelled (\(reason))."
        case .timedOut(let kind, let interval):
            return kind == .idle
                ? "The request timed out: \(kind) for \(Self.format(interval)) s."
                : "The request timed out: \(kind) \(Self.format(interval)) s."
        case .network(let error):
            return
                "Network error \(error.code.rawValue): \(error.localizedDescription)\(error.failingURL.map { " (\(Self.redaction.url($0)))" } ?? "")."
        case .authenticationFailed(let response, let data):
            return "Authentication failed\(response.map { ": \($0.statusCode) from \(Self.describe($0))" } ?? "")\(Self.preview(data))."
        case .redirectFailed(let reason):
            return "Redirect failed: \(reason)."
        case .responseTooLarge(let limit, let response):
            return "Response too large: the body from \(Self.describe(response)) exceeds the \(limit)-byte limit for bodies kept in memory."
        case .partialContentNotRequested(let response):
            return
                "Partial content not requested: \(Self.describe(response)) answered 206 with \(response.value(forHTTPHeaderField: "Content-Range").map { "Content-Range \"\(Self.printable(String($0.prefix(80))))\"" } ?? "no Content-Range") to a request that carried no Range, and a part is not the resource."
        case .serverTrustFailed(let host, let reason):
            return "Server trust failed for \(host): \(reason)."
        case .invalidHeader(let name):
            return
                "Invalid header \"\(Self.printable(name))\": a name or value with CR, LF or NUL could inject other headers; nothing was sent."
        case .credentialRefreshFailed(let reason):
            return "Credential refresh failed: \(reason)."
        case .requestAdaptationFailed(let underlying):
            return "A request adapter failed: \(underlying); nothing was sent."
        case .streamFailed(let reason):
            return "Stream failed: \(reason)."
        case .outboxFailed(let reason):
            return "Outbox failed: \(reason)."
        case .bodyFileFailed(let reason):
            return "Body file failed: \(reason)."
        case .routeFailed(let reason):
            return "Route failed: \(reason); nothing reached the server."
        case .invalidMethod(let method):
            return
                "Invalid method \"\(Self.printable(method))\": not an HTTP token, so it could inject headers or a second request; nothing was sent."
        }
    }

    /// Secrets never appear in descriptions: URLs lose their password and token-like query
    /// values, and body previews their secret-named fields (``Redaction``).
    static let redaction = Redaction()

    /// A header name shown with its control characters escaped.
    private static func printable(_ text: String) -> String {
        text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? String(format: "\\x%02X", $0.value) : String($0) }.joined()
    }

    /// The same text as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }

    private static func describe(_ response: HTTPURLResponse) -> String {
        response.url.map { redaction.url($0) } ?? "the server"
    }

    private static func format(_ interval: TimeInterval) -> String {
        String(format: "%.3g", interval)
    }

    /// A short, single-line preview of a body, so "unacceptable content type text/html" shows
    /// which page actually came back (a login portal, an error page) without dumping megabytes.
    static func preview(_ data: Data?, limit: Int = 120) -> String {
        guard let data, !data.isEmpty else { return "" }
        // A body that echoes the request (httpbin's /headers, a debug page) must not carry its
        // credentials into logs through the error: JSON and form fields named like secrets or
        // credential headers are redacted before the preview is cut.
        let redacted = redaction.body(String(decoding: data.prefix(64 * 1024), as: UTF8.self), contentType: "application/json")
        // Masked by value before the cut, so a credential across it is hidden whole: enough
        // bytes for `limit` characters are masked, then the characters are counted.
        let masked = redaction.masked(redacted, maximumBytes: limit * 4).text
        let text = String(masked.prefix(limit))
            .replacingOccurrences(of: "\r", with: " ")
            .replacingOccurrences(of: "\n", with: " ")
        return "; body (\(data.count) bytes): \"\(text)\(data.count > limit ? "…" : "")\""
    }
}

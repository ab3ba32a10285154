#if os(Linux)
    import Foundation
    import ConveyorLocking
    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// One request sent by a ``CurlTransport``: the easy handle's options, libcurl's callbacks,
    /// and the events they become for the ``TransportTaskDelegate``.
    ///
    /// The thread that owns the multi handle (the loop thread, or a caller that found it idle)
    /// configures and drives it; `cancel()` may come from any thread. Delegate calls happen on that
    /// thread, never under the lock (a delegate may cancel in return).
    final class CurlTransfer: @unchecked Sendable {
        // @unchecked Sendable: every mutable field is in `state`, behind one Lock. `errorBuffer`
        // is written by libcurl and read by the handle's owner only, between callbacks.

        typealias Handle = CurlLibrary.Handle

        let request: URLRequest
        /// The request's URL: responses, cookies and errors name it.
        let url: URL
        /// The URL handed to libcurl: `url`, or for an `http+unix` URL its `http://localhost/…` form.
        private let wireURL: URL
        /// The Unix domain socket the request goes over; nil for TCP.
        private let socketPath: String?
        let delegate: any TransportTaskDelegate
        /// What the transfer holds beyond its body (pinned values), let go of as it completes.
        private let release: AttemptRelease
        private let bodySource: CurlRequestBody.Source?
        private let settings: CurlTransport.Settings
        private let library: CurlLibrary
        private let state = Lock(State())
        private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: CurlConstant.errorBufferSize)

        /// What the loop does with a transfer libcurl reports done.
        enum Outcome {
            /// Completed (the delegate has been told); the handle can be reused.
            case finished
            /// Send again on the same handle (an authentication challenge was answered).
            case resend
        }

        private struct State {
            var body: CurlRequestBody?
            /// The curl_slist the handle sends: replaced under the lock, and freed by the one
            /// caller that took it out (curl only reads it on the loop thread meanwhile).
            var headerList = LockedReference<Handle?>(nil)
            /// The easy handle while this transfer runs on it (for options a callback changes):
            /// owned by the loop thread, the only one that uses it.
            var handle: LockedReference<Handle>?
            var head = CurlResponseHead()
            var response: HTTPResponseHead?
            /// A 401/407 head (and its body) kept back until it is known whether the challenge is
            /// answered: a response the caller never sees if it is. At most
            /// ``CurlTransfer/heldBodyLimit`` bytes of body are kept: past them the question is
            /// decided (see ``CurlTransfer/releaseHeld(_:adding:)``).
            var held: HeldResponse?
            /// A held 401 or 407 was handed on before its end (its body passed the held bound): the
            /// response whose challenge nobody answers, failed at the end as an unanswered one.
            var unansweredChallenge = false
            /// The client's own proxy refused a forwarded request (a 407 whose body passed the held
            /// bound): the transfer was aborted, and ends as that refusal.
            var proxyRefused = false
            /// The transfer was aborted to answer a challenge whose body passed the held bound: it
            /// is sent again, with the answer, on a new connection (the old one has body left).
            var resendsAnswer = false
            /// libcurl's prereq callback ran in this run of the handle: the connection (and any
            /// proxy tunnel) is up, and every head from now on is the origin's. Before it, a head
            /// is a proxy's answer to `CONNECT`.
            var connected = false
            /// The proxy's answer to `CONNECT` being read (only with libcurl 7.80 or later, whose
            /// prereq callback tells it apart from the origin's).
            var connectHead = CurlResponseHead()
            var connectRefusals = 0
            /// The proxy's 407s over every run of the handle (CONNECT answers and forwarded
            /// requests'): libcurl sends the configured credentials only in answer to a 407
            /// (Basic or Digest, never up front), so they were sent only if a second one came.
            var proxyChallenges = 0
            /// The proxy answered `CONNECT` with a 407 that ends the request: the transfer was
            /// aborted before libcurl read the 407's body (a byte at a time: 64 MiB took minutes,
            /// and the request ended in an idle timeout).
            var connectRefused = false
            /// Whether a proxy carries this run of the handle (set as it is configured).
            var proxyRoute = TransferMetrics.ProxyRoute.environment
            var bytesSent: Int64 = 0
            /// The body stream failed a read (or claimed more bytes than asked): the abort that
            /// follows is its failure, not a cancel.
            var bodyReadFailed = false
            var cancelled = false
            var completed = false
            var failedChallenges = 0
            var answer: ChallengeAnswer?
            /// Set after a kept-alive connection died under the request: it is sent once more, on
            /// a new connection.
            var needsFreshConnection = false
            /// The consumer asked to stop receiving: the next write callback pauses the transfer.
            var receivePaused = false
            /// libcurl has resolved, opened a socket or handed over a connection for this run
            /// of the handle: the request is out of the queue for a connection.
            var leftConnectionQueue = false
        }

        /// Credentials chosen for a challenge, sent with the next attempt.
        private enum ChallengeAnswer {
            case header(name: String, value: String)
            case curlNegotiated(user: String, password: String, scheme: Int)
        }

        init(
            request: URLRequest, bodyFile: OpenBodyFile?, delegate: any TransportTaskDelegate, release: AttemptRelease,
            settings: CurlTransport.Settings, library: CurlLibrary, socketTarget: (url: URL, socketPath: String)? = nil
        ) {
            self.request = request
            self.url = request.url ?? URL(fileURLWithPath: "/")
            self.wireURL = socketTarget?.url ?? url
            self.socketPath = socketTarget?.socketPath
            self.delegate = delegate
            self.release = release
            self.settings = settings
            self.library = library
            if let bodyFile {
                bodySource = .file(bodyFile)
            } else if let data = request.httpBody {
                bodySource = .data(data)
            } else if let stream = request.httpBodyStream {
                bodySource = .stream(stream)
            } else {
                bodySource = nil
            }
            errorBuffer.initialize(repeating: 0, count: CurlConstant.errorBufferSize)
        }

        deinit {
            errorBuffer.deallocate()
            if let list = state.withLock({ $0.headerList.value }) { library.slistFreeAll(list) }
        }

        /// libcurl's receive buffer, the most body bytes one write callback hands over: the curl
        /// command line's 100 kB rather than libcurl's 16 kB default. Each callback costs a `Data`,
        /// locks and progress bookkeeping; measured on 50 MB from nginx (medians of 7): to a file
        /// 47 → 35 ms, into memory 58 → 54 ms; small requests unchanged.
        static let receiveBufferSize = 100 * 1024

        var isCancelled: Bool { state.withLock { $0.cancelled } }

        /// Marks the transfer cancelled; libcurl's next callback for it aborts.
        func markCancelled() {
            state.withLock { $0.cancelled = true }
        }

        /// Asks libcurl to stop delivering the body: the next write callback answers
        /// `CURL_WRITEFUNC_PAUSE`, and the bytes stay in libcurl and the socket.
        func requestPause() {
            state.withLock { $0.receivePaused = true }
        }

        /// Lets the body flow again; the owner of the multi handle then calls `curl_easy_pause`.
        /// - Returns: Whether the transfer had asked to pause.
        func clearPause() -> Bool {
            state.withLock { state in
                defer { state.receivePaused = false }
                return state.receivePaused
            }
        }

        // MARK: - Configuring the handle (the multi handle's owner)

        /// Sets every option of `handle` for this request.
        /// - Returns: An error that fails the transfer before anything is sent, or nil.
        func configure(_ handle: Handle) -> (any Error)? {
            let curl = library
            let userData = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
            let method = (request.httpMethod ?? "GET").uppercased()
            guard let scheme = wireURL.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
                return URLError(.unsupportedURL, userInfo: [NSURLErrorFailingURLErrorKey: url])
            }
            if scheme == "https", let error = settings.trustError {
                return ConveyorError.serverTrustFailed(host: url.host ?? "the server", reason: error)
            }
            let headers = request.allHTTPHeaderFields ?? [:]
            let declaredLength = headers.first { $0.key.equalsIgnoringASCIICase("Content-Length") }.flatMap { Int64($0.value) }
            let body = bodySource.map { CurlRequestBody($0, declaredLength: declaredLength) }
            let (answer, fresh) = state.withLock { state -> (ChallengeAnswer?, Bool) in
                state.body = body
                state.head = CurlResponseHead()
                state.response = nil
                state.held = nil
                state.unansweredChallenge = false
                state.proxyRefused = false
                state.bytesSent = 0
                state.leftConnectionQueue = false
                state.connected = false
                state.connectHead = CurlResponseHead()
                state.connectRefusals = 0
                state.connectRefused = false
                defer { state.resendsAnswer = false }
                return (state.answer, state.needsFreshConnection || state.resendsAnswer)
            }
            // Until one of three callbacks says otherwise, the request may be waiting for a
            // connection (libcurl queues it behind maximumConnectionsPerHost busy ones). Only
            // with libcurl 7.80 or later, whose prereq callback sees a reused connection too:
            // without it a request on a reused connection would never count as out of the queue.
            let seesConnect =
                curl.setOption(handle, .prereqFunction, function: unsafeBitCast(curlPrereqCallback, to: UnsafeRawPointer.self)) == 0
            if seesConnect {
                curl.setOption(handle, .prereqData, pointer: userData)
                curl.setOption(
                    handle, .resolverStartFunction, function: unsafeBitCast(curlResolverStartCallback, to: UnsafeRawPointer.self))
                curl.setOption(handle, .resolverStartData, pointer: userData)
                curl.setOption(handle, .sockoptFunction, function: unsafeBitCast(curlSockoptCallback, to: UnsafeRawPointer.self))
                curl.setOption(handle, .sockoptData, pointer: userData)
                delegate.transportAwaitsConnection()
            }
            curl.setOption(handle, .url, wireURL.absoluteString)
            let route = settings.applyRoute(to: handle, host: wireURL.host ?? "", socketPath: socketPath, library: curl)
            state.withLock { state in
                state.proxyRoute = route
                // Without the prereq callback (libcurl before 7.80) no head can be told to be a
                // CONNECT answer (they stay suppressed): every head is the origin's.
                if !seesConnect { state.connected = true }
            }
            if CurlTransport.verbose { curl.setOption(handle, .verbose, 1) }
            if fresh { curl.setOption(handle, .freshConnect, 1) }
            curl.setOption(handle, .noSignal, 1)
            curl.setOption(handle, .errorBuffer, pointer: UnsafeRawPointer(errorBuffer))
            curl.setOption(handle, .pathAsIs, 1)
            curl.setOption(handle, .tcpNoDelay, 1)
            curl.setOption(handle, .bufferSize, CurlTransfer.receiveBufferSize)
            // A proxy's answer to CONNECT reaches the header callback when the prereq callback
            // tells it apart from the origin's (see didReceiveConnectHeaderLine).
            curl.setOption(handle, .suppressConnectHeaders, seesConnect ? 0 : 1)
            curl.setOption(handle, .httpVersion, CurlConstant.httpVersion2TLS)
            // Over TLS, wait for a connection being set up to tell (by ALPN) whether it multiplexes
            // rather than opening another. Never over plain HTTP (no HTTP/2 without TLS here):
            // libcurl then waited for a busy HTTP/1.1 connection — an upload sat behind a slow
            // download until the download ended (seen in the graceful-shutdown test).
            if scheme == "https" { curl.setOption(handle, .pipeWait, 1) }
            curl.setOption(handle, .headerFunction, function: unsafeBitCast(curlHeaderCallback, to: UnsafeRawPointer.self))
            curl.setOption(handle, .headerData, pointer: userData)
            curl.setOption(handle, .writeFunction, function: unsafeBitCast(curlWriteCallback, to: UnsafeRawPointer.self))
            curl.setOption(handle, .writeData, pointer: userData)
            // An explicit Accept-Encoding is sent as given (and decoded where libcurl can);
            // otherwise every encoding libcurl decodes is offered.
            let acceptEncoding = headers.first { $0.key.equalsIgnoringASCIICase("Accept-Encoding") }?.value
            curl.setOption(handle, .acceptEncoding, acceptEncoding ?? "")
            // Decoding is turned off per response for a coding libcurl does not know (see
            // didReceiveHeaderLine); a reused handle starts with it on again.
            curl.setOption(handle, .httpContentDecoding, 1)
            state.withLock { $0.handle = LockedReference(handle) }
            settings.applyTLS(to: handle, library: curl)

            switch method {
            case "GET" where body == nil:
                curl.setOption(handle, .httpGet, 1)
            case "HEAD":
                curl.setOption(handle, .noBody, 1)
            default:
                if let body {
                    curl.setOption(handle, .post, 1)
                    curl.setOption(handle, .postFieldSizeLarge, body.length ?? -1)
                    if let size = body.uploadBufferSize { curl.setOption(handle, .uploadBufferSize, size) }
                    curl.setOption(handle, .readFunction, function: unsafeBitCast(curlReadCallback, to: UnsafeRawPointer.self))
                    curl.setOption(handle, .readData, pointer: userData)
                    curl.setOption(handle, .seekFunction, function: unsafeBitCast(curlSeekCallback, to: UnsafeRawPointer.self))
                    curl.setOption(handle, .seekData, pointer: userData)
                    if case .stream(let stream as ThrottledInputStream) = bodySource, let rate = stream.bytesPerSecond {
                        // libcurl paces the upload; the stream must not sleep on the driving thread.
                        stream.sleepsBetweenPackets = false
                        curl.setOption(handle, .maxSendSpeedLarge, rate)
                    }
                } else if method == "POST" || method == "PUT" || method == "PATCH" {
                    // A bodiless POST/PUT/PATCH still says Content-Length: 0, as URLSession does.
                    curl.setOption(handle, .post, 1)
                    curl.setOption(handle, .postFieldSizeLarge, Int64(0))
                }
                if method != "POST" { curl.setOption(handle, .customRequest, method) }
            }
            if case .curlNegotiated(let user, let password, let scheme) = answer {
                // Separate options: in CURLOPT_USERPWD a `:` in the user name would split it anew.
                curl.setOption(handle, .userName, user)
                curl.setOption(handle, .password, password)
                curl.setOption(handle, .httpAuth, scheme)
            }
            let list = headerList(headers, answer: answer)
            let previous = state.withLock { state -> LockedReference<Handle?> in
                defer { state.headerList = LockedReference(list) }
                return state.headerList
            }
            if let previous = previous.value { curl.slistFreeAll(previous) }
            curl.setOption(handle, .httpHeader, pointer: list.map(UnsafeRawPointer.init))
            return nil
        }

        /// The request's headers as a curl_slist: the request's own (stored cookies included:
        /// `CurlTransport.startTask` stamped them), the session's additional ones it does not
        /// override, the chosen credentials, and no `Expect` (libcurl would wait a second for
        /// `100 Continue` before larger bodies).
        private func headerList(_ headers: [String: String], answer: ChallengeAnswer?) -> Handle? {
            var headers = headers
            // A request has a handful of fields: scanning them costs less than a set of lower-cased names.
            func has(_ name: String) -> Bool { headers.keys.contains { $0.equalsIgnoringASCIICase(name) } }
            for (name, value) in settings.additionalHeaders where !has(name) {
                headers[name] = value
            }
            if case .header(let name, let value) = answer { headers[name] = value }
            var list: Handle?
            func append(_ line: String) {
                list = line.withCString { library.slistAppend(list, $0) } ?? list
            }
            for (name, value) in headers where !name.equalsIgnoringASCIICase("Accept-Encoding") {
                // "Name;" is libcurl's spelling of a header with an empty value ("Name:" removes one).
                append(value.isEmpty ? "\(name);" : "\(name): \(value)")
            }
            if !has("Expect") { append("Expect:") }
            return list
        }

        // MARK: - libcurl callbacks (the multi handle's owner)

        fileprivate func didReceiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Int {
            if let connecting = didReceiveConnectHeaderLine(bytes) { return connecting }
            let deliver = state.withLock { state -> HTTPResponseHead? in
                guard !state.cancelled else { return nil }
                if state.head.consume(bytes) == false {
                    // A new head after a held 401 means libcurl answered the challenge itself.
                    if state.head.hasStarted, state.held != nil { state.held = nil }
                    return nil
                }
                let head = state.head
                guard let response = head.response(for: url) else { return nil }
                // A content coding libcurl cannot decode (`Content-Encoding: foo`) failed the
                // transfer ("Unrecognized content encoding type"). Browsers hand such a body
                // over as received, the field saying what it is; so does this transport.
                // libcurl reads the setting when the body is written, after this callback.
                // An unknown transfer coding (`Transfer-Encoding: x-custom`, error 61 too) sits
                // on the same decoding stack: the same switch hands its body over as it came
                // (de-chunked when `chunked` is last, which libcurl handles apart from the stack).
                if !ContentCodings.areDecodable(head.values(of: "Content-Encoding").joined(separator: ","))
                    || !ContentCodings.areDecodableTransferCodings(head.values(of: "Transfer-Encoding").joined(separator: ",")),
                    let handle = state.handle?.value
                {
                    library.setOption(handle, .httpContentDecoding, 0)
                }
                settings.cookies.store(head.values(of: "Set-Cookie"), from: url, for: request)
                if response.statusCode == 401 || response.statusCode == 407 {
                    if response.statusCode == 407 { state.proxyChallenges += 1 }
                    state.held = (response, head, Data())
                    return nil
                }
                state.response = response
                return response
            }
            if isCancelled { return 0 }
            if let deliver { delegate.transportDidReceive(response: deliver) }
            return bytes.count
        }

        /// A line of the proxy's answer to `CONNECT` (before the prereq callback): nil when the
        /// line is the origin's. A 407 ends the request as the proxy's refusal, at the end of its
        /// head — before libcurl reads its body a byte at a time — unless libcurl is to answer it
        /// with the configured credentials (the first 407, with a body of a few kB at most).
        /// - Returns: What the header callback answers: the line's length, or 0 to abort.
        private func didReceiveConnectHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Int? {
            state.withLock { state -> Int? in
                guard !state.connected, !state.cancelled else { return nil }
                guard state.connectHead.consume(bytes) else { return bytes.count }
                let head = state.connectHead
                state.connectHead = CurlResponseHead()
                guard head.statusCode == 407 else { return bytes.count }
                state.connectRefusals += 1
                state.proxyChallenges += 1
                // A body without a length ends with the connection: libcurl reads none of it.
                let lengths = head.values(of: "Content-Length")
                let boundedBody =
                    head.values(of: "Transfer-Encoding").isEmpty
                    && (lengths.isEmpty || lengths.first.flatMap { HTTPGrammar.contentLength($0) }.map { $0 <= Self.heldBodyLimit } == true)
                let answerable = settings.route.proxy.credentials != nil && state.connectRefusals == 1 && boundedBody
                guard !answerable else { return bytes.count }
                state.connectRefused = true
                return 0
            }
        }

        /// The prereq callback: the connection, and any proxy tunnel, is up.
        fileprivate func didConnect() {
            state.withLock { $0.connected = true }
            didLeaveConnectionQueue()
        }

        /// The most body bytes of a 401 or 407 kept back while it is unknown whether its challenge
        /// is answered: an error page is a few kB. Past this the question is decided at once, so a
        /// hostile body is never held whole (it was: 800 MB in memory, past a 1 MB
        /// `maximumResponseSize`); the limit itself is the operation's, applied to what is handed on.
        static let heldBodyLimit = 64 * 1024

        /// What one body chunk is for, decided under the lock.
        private enum ChunkRoute {
            case cancelled, paused, kept, forwarded
            /// A held 401 or 407 whose body passes ``CurlTransfer/heldBodyLimit`` with this chunk.
            case releasesHeld(HeldResponse)
        }
        private typealias HeldResponse = (response: HTTPResponseHead, head: CurlResponseHead, body: Data)

        fileprivate func didReceiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
            let route = state.withLock { state -> ChunkRoute in
                if state.cancelled { return .cancelled }
                // Not consumed: libcurl keeps these bytes and delivers them again once unpaused.
                if state.receivePaused, state.response != nil, state.held == nil { return .paused }
                if let held = state.held {
                    // Past the bound: decided outside the lock (the delegate is asked).
                    guard held.body.count + bytes.count > Self.heldBodyLimit else {
                        state.held?.body.append(contentsOf: bytes)
                        return .kept
                    }
                    return .releasesHeld(held)
                }
                return state.response != nil ? .forwarded : .kept
            }
            switch route {
            case .cancelled: return 0
            case .paused: return CurlConstant.writePause
            case .kept: return bytes.count
            case .releasesHeld(let held): return releaseHeld(held, adding: bytes)
            case .forwarded:
                delegate.transportDidReceive(data: Data(bytes))
                // A pause asked for before the task was stored applies from the next chunk.
                if delegate.transportWantsPause { requestPause() }
                return bytes.count
            }
        }

        /// A held 401 or 407 whose body passed ``heldBodyLimit``: decides now what the end of the
        /// transfer would have. A challenge answered is sent again (this transfer is aborted:
        /// reading the rest of the body to keep the connection could take forever); the client's
        /// own proxy refusing a forwarded request ends as that refusal; any other is handed on as
        /// the response, its body with it, for the operation to apply its limit to.
        /// - Returns: What the write callback answers: `bytes.count` to go on, 0 to abort.
        private func releaseHeld(_ held: HeldResponse, adding bytes: UnsafeRawBufferPointer) -> Int {
            guard let handle = state.withLock({ $0.handle?.value }) else { return 0 }
            if held.response.statusCode == 407, isOwnProxy(handle: handle) {
                state.withLock { $0.proxyRefused = true }
                return 0
            }
            if prepareAnswer(to: held.response, head: held.head) {
                state.withLock { $0.resendsAnswer = true }
                return 0
            }
            let challenged = isChallenged(held.response, head: held.head)
            state.withLock { state in
                state.held = nil
                state.response = held.response
                state.unansweredChallenge = challenged
            }
            delegate.transportDidReceive(response: held.response)
            if isCancelled { return 0 }
            if !held.body.isEmpty { delegate.transportDidReceive(data: held.body) }
            if isCancelled { return 0 }
            delegate.transportDidReceive(data: Data(bytes))
            if delegate.transportWantsPause { requestPause() }
            return bytes.count
        }

        /// Whether a 401 or 407 carries a challenge the client could have answered.
        private func isChallenged(_ response: HTTPResponseHead, head: CurlResponseHead) -> Bool {
            head.values(of: response.statusCode == 401 ? "WWW-Authenticate" : "Proxy-Authenticate").contains(
                where: CurlChallenge.isAnswerable)
        }

        /// Whether the connection went to the client's own proxy (by its port: libcurl does not
        /// say whether a proxy was used), so that a 407 on it is the proxy's.
        private func isOwnProxy(handle: Handle) -> Bool {
            socketPath == nil && settings.route.proxy.server.map { library.info(handle, long: .primaryPort) == $0.port } == true
        }

        fileprivate func readBody(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
            guard let body = state.withLock({ $0.cancelled ? nil : $0.body }) else { return CurlConstant.readAbort }
            guard let read = body.read(into: buffer, capacity: capacity) else {
                state.withLock { $0.bodyReadFailed = true }
                return CurlConstant.readAbort
            }
            let progress = state.withLock { state -> (start: Int64, sent: Int64, expected: Int64) in
                defer { state.bytesSent += Int64(read) }
                return (state.bytesSent, state.bytesSent + Int64(read), body.length ?? -1)
            }
            // One read fills up to the 1 MiB upload buffer (for speed); progress is still told in
            // steps of at most 64 KiB, as URLSession tells it, so a 300 kB body is not one jump.
            var reported = progress.start
            while reported < progress.sent {
                let step = min(Int64(Self.progressStep), progress.sent - reported)
                reported += step
                delegate.transportDidSend(bytes: step, totalBytesSent: reported, totalBytesExpectedToSend: progress.expected)
            }
            return read
        }

        /// The largest step of upload progress one event reports.
        static let progressStep = 64 * 1024

        /// libcurl starts a name lookup, opens a socket, or has a connection for the request.
        fileprivate func didLeaveConnectionQueue() {
            let first = state.withLock { state -> Bool in
                defer { state.leftConnectionQueue = true }
                return !state.leftConnectionQueue
            }
            if first { delegate.transportDidLeaveConnectionQueue() }
        }

        fileprivate func seekBody(to offset: Int64) -> Int32 {
            guard let body = state.withLock({ $0.body }), body.seek(to: offset) else { return CurlConstant.seekCantSeek }
            state.withLock { $0.bytesSent = offset }
            return CurlConstant.seekOK
        }

        // MARK: - Completion (the multi handle's owner)

        /// libcurl finished the transfer with `code`: reports metrics and the outcome, or
        /// decides to send again with credentials.
        func finish(code: Int32, handle: Handle) -> Outcome {
            let (cancelled, held, response) = state.withLock { state in (state.cancelled, state.held, state.response) }
            if cancelled {
                complete(response: response, error: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: url]))
                return .finished
            }
            delegate.transportDidCollect(metrics: metrics(of: handle))
            if let error = proxyFailure(code: code, handle: handle, held: held?.response) {
                complete(response: nil, error: error)
                return .finished
            }
            if code == CurlCode.ok.rawValue, let held {
                if prepareAnswer(to: held.response, head: held.head) { return .resend }
                delegate.transportDidReceive(response: held.response)
                if !held.body.isEmpty { delegate.transportDidReceive(data: held.body) }
                let challenged = isChallenged(held.response, head: held.head)
                complete(
                    response: held.response,
                    error: challenged ? URLError(.userCancelledAuthentication, userInfo: [NSURLErrorFailingURLErrorKey: url]) : nil)
                return .finished
            }
            if case .file(let file) = bodySource, let failure = file.failure {
                // The body file ended early or changed: the read callback cut the upload short.
                complete(response: nil, error: failure)
                return .finished
            }
            if state.withLock({ $0.bodyReadFailed }) {
                // libcurl reports the read callback's abort as "aborted by callback", which reads
                // as a cancel; it was the body stream's failure, named as URLSession names it.
                complete(response: nil, error: URLError.bodyStreamExhausted("the request body stream failed", url: url))
                return .finished
            }
            if state.withLock({ $0.resendsAnswer }) { return .resend }
            if shouldResendOnFreshConnection(code: code, handle: handle, responded: response != nil || held != nil) { return .resend }
            if code == CurlCode.ok.rawValue {
                let unanswered = state.withLock { $0.unansweredChallenge }
                complete(
                    response: response,
                    error: response == nil
                        ? URLError(.badServerResponse, userInfo: [NSURLErrorFailingURLErrorKey: url])
                        : unanswered ? URLError(.userCancelledAuthentication, userInfo: [NSURLErrorFailingURLErrorKey: url]) : nil)
            } else {
                let text = String(cString: errorBuffer)
                complete(
                    response: response ?? held?.response,
                    error: CurlErrors.error(for: code, text: text.isEmpty ? library.describe(code) : text, url: url))
            }
            return .finished
        }

        /// A kept-alive connection can be closed by the server just as a request goes out on it;
        /// the request then fails with nothing received. Browsers and URLSession send it again on
        /// a new connection, once; so does this transport — when nothing of a response arrived, the
        /// connection was a reused one, and the body can be sent again (not a one-pass stream).
        private func shouldResendOnFreshConnection(code: Int32, handle: Handle, responded: Bool) -> Bool {
            let staleCodes: Set<Int32> = [CurlCode.gotNothing.rawValue, CurlCode.sendError.rawValue, CurlCode.recvError.rawValue]
            guard staleCodes.contains(code), !responded, library.info(handle, long: .numConnects) == 0 else { return false }
            if case .stream = bodySource { return false }
            return state.withLock { state in
                guard !state.needsFreshConnection else { return false }
                state.needsFreshConnection = true
                return true
            }
        }

        /// Whether the proxy libcurl takes from the environment for `url` has credentials in its
        /// URL, read as libcurl reads the variables: `http_proxy` (lower case only) for `http`,
        /// `https_proxy` or `HTTPS_PROXY` for `https`, then `all_proxy` or `ALL_PROXY`.
        static func environmentProxyHasCredentials(for url: URL) -> Bool {
            let environment = ProcessInfo.processInfo.environment
            let names =
                url.scheme?.lowercased() == "https"
                ? ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] : ["http_proxy", "all_proxy", "ALL_PROXY"]
            guard let value = names.lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) else { return false }
            let proxyURL = URL(string: value.contains("://") ? value : "http://" + value)
            return proxyURL?.user?.isEmpty == false
        }

        /// The typed error of a proxy that refused the request: a `407` to a forwarded request or
        /// to `CONNECT` (libcurl already answered a challenge once when credentials are
        /// configured), or a broken SOCKS handshake; nil otherwise.
        private func proxyFailure(code: Int32, handle: Handle, held: HTTPResponseHead?) -> ConveyorError? {
            let proxy = settings.route.proxy
            let name = proxy.server?.description ?? "from the environment"
            // A 407 to CONNECT is the proxy's. A 407 response to a forwarded request is the
            // proxy's when the connection went to the client's own proxy (its port: libcurl does
            // not say whether a proxy was used); one from an origin reached directly, or through
            // the environment's proxy, stays an HTTP status as before.
            let forwardedRefusal =
                (code == CurlCode.ok.rawValue && held?.statusCode == 407 && isOwnProxy(handle: handle))
                || state.withLock { $0.proxyRefused || $0.connectRefused }
            let refused = forwardedRefusal || library.info(handle, long: .httpConnectCode) == 407
            if refused {
                // Sent only if libcurl answered an earlier 407 with them (the attack on issue 58:
                // a refusal without a challenge, or past the held bound, said "refused the
                // configured credentials" though none went out).
                // The environment's proxy: libcurl sends the user information of its URL up front
                // (Basic), so they went out whenever that URL carries them.
                let sent =
                    proxy.server == nil
                    ? Self.environmentProxyHasCredentials(for: url)
                    : proxy.credentials != nil && state.withLock { $0.proxyChallenges } >= 2
                return .routeFailed(reason: .proxyAuthenticationFailed(proxy: name, credentialsSent: sent))
            }
            // A connection the client's own proxy was to take that could not be made: the proxy
            // is unreachable (libcurl connects to nothing else), and is named, rather than a
            // cannotConnectToHost that reads as "the server is down".
            if case .proxy(let server) = state.withLock({ $0.proxyRoute }),
                code == CurlCode.couldntConnect.rawValue || code == CurlCode.couldntResolveProxy.rawValue
            {
                let text = String(cString: errorBuffer)
                let error =
                    CurlErrors.error(for: code, text: text.isEmpty ? library.describe(code) : text, url: url) as? URLError
                    ?? URLError(.cannotConnectToHost, userInfo: [NSURLErrorFailingURLErrorKey: url])
                return .routeFailed(reason: .proxyUnreachable(proxy: server, error: error))
            }
            if code == CurlCode.proxy.rawValue {
                let text = String(cString: errorBuffer)
                return .routeFailed(reason: .proxyHandshakeFailed(proxy: name, detail: text.isEmpty ? library.describe(code) : text))
            }
            return nil
        }

        /// Fails the transfer without libcurl (before it started, or when it could not start).
        func fail(_ error: any Error) {
            complete(response: nil, error: error)
        }

        /// Tells the delegate the transfer ended, once, through its release.
        func complete(response: HTTPResponseHead?, error: (any Error)?) {
            let first = state.withLock { state -> Bool in
                defer {
                    state.completed = true
                    state.body = nil
                }
                return !state.completed
            }
            if first { release.complete(delegate, response: response, error: error) }
        }

        /// Asks the delegate about a 401/407 challenge; true when the transfer is to be sent again
        /// with the credential it chose.
        private func prepareAnswer(to response: HTTPResponseHead, head: CurlResponseHead) -> Bool {
            let isProxy = response.statusCode == 407
            // A proxy's credentials come from Configuration.proxy alone (libcurl answers with
            // them): the operation's credentials belong to the origin and are never offered to it.
            guard !isProxy,
                let challengeLine = head.values(of: isProxy ? "Proxy-Authenticate" : "WWW-Authenticate").first(
                    where: CurlChallenge.isAnswerable)
            else { return false }
            let failures = state.withLock { $0.failedChallenges }
            let challenge = CurlChallenge.make(
                line: challengeLine, url: url, isProxy: isProxy, failures: failures, response: response.urlResponse)
            let (disposition, credential) = delegate.transportDisposition(for: challenge)
            guard disposition == .useCredential, let user = credential?.user, let password = credential?.password,
                failures < 5, bodySource.map({ if case .stream = $0 { false } else { true } }) ?? true
            else { return false }
            let scheme = challengeLine.split(separator: " ").first.map { $0.lowercased() } ?? ""
            let answer: ChallengeAnswer
            if scheme == "basic" {
                let token = Data("\(user):\(password)".utf8).base64EncodedString()
                answer = .header(name: isProxy ? "Proxy-Authorization" : "Authorization", value: "Basic \(token)")
            } else {
                answer = .curlNegotiated(
                    user: user, password: password, scheme: scheme == "digest" ? CurlConstant.authDigest : CurlConstant.authAnySafe)
            }
            state.withLock { state in
                state.failedChallenges += 1
                state.answer = answer
            }
            return true
        }

        private func metrics(of handle: Handle) -> TransferMetrics {
            func seconds(_ info: CurlInfo) -> TimeInterval { Double(library.info(handle, offset: info) ?? 0) / 1_000_000 }
            let version: String
            switch library.info(handle, long: .httpVersion) {
            case 1: version = "HTTP/1.0"
            case 3: version = "HTTP/2"
            case 30: version = "HTTP/3"
            default: version = "HTTP/1.1"
            }
            let secure = wireURL.scheme?.lowercased() == "https"
            let reused = library.info(handle, long: .numConnects) == 0
            // libcurl reports a reused connection's phases as 0 or as tiny leftovers; make them 0
            // and keep the rest in order, as the type promises.
            let lookup = reused ? 0 : seconds(.nameLookupTime)
            let connect = reused ? 0 : max(lookup, seconds(.connectTime))
            let handshake = secure ? (reused ? 0 : max(connect, seconds(.appConnectTime))) : nil
            let firstByte = max(handshake ?? connect, seconds(.startTransferTime))
            return TransferMetrics(
                domainLookup: lookup, connect: connect, secureConnection: handshake, firstByte: firstByte,
                lastByte: max(firstByte, seconds(.totalTime)), httpVersion: version,
                reusedConnection: reused, remoteAddress: library.info(handle, string: .primaryIP), proxy: state.withLock { $0.proxyRoute })
        }
    }

    // libcurl's callbacks: C functions that find the transfer through their user-data pointer
    // (unretained: the loop keeps the transfer alive while its handle is in the multi handle).

    private let curlHeaderCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        pointer, size, count, userData in
        guard let pointer, let userData else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData).takeUnretainedValue()
        return transfer.didReceiveHeaderLine(UnsafeRawBufferPointer(start: pointer, count: size * count))
    }

    private let curlWriteCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        pointer, size, count, userData in
        guard let pointer, let userData else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData).takeUnretainedValue()
        return transfer.didReceiveBody(UnsafeRawBufferPointer(start: pointer, count: size * count))
    }

    private let curlReadCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        pointer, size, count, userData in
        guard let pointer, let userData else { return CurlConstant.readAbort }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData).takeUnretainedValue()
        return pointer.withMemoryRebound(to: UInt8.self, capacity: size * count) { transfer.readBody(into: $0, capacity: size * count) }
    }

    private let curlSeekCallback: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int32 = { userData, offset, origin in
        guard let userData, origin == SEEK_SET else { return CurlConstant.seekCantSeek }
        return Unmanaged<CurlTransfer>.fromOpaque(userData).takeUnretainedValue().seekBody(to: offset)
    }

    // The three moments a request leaves libcurl's queue for a connection (whichever comes
    // first): a new name lookup starts, a socket is opened for it, or it has a connection (new
    // or reused) and its request is about to go. Each answers 0: go on.

    private let curlResolverStartCallback:
        @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Int32 = {
            _, _, userData in
            if let userData { Unmanaged<CurlTransfer>.fromOpaque(userData).takeUnretainedValue().didLeaveConnectionQueue() }
            return 0
        }

    private let curlSockoptCallback: @convention(c) (UnsafeMutableRawPointer?, Int32, Int32) -> Int32 = { userData, _, _ in
        if let userData { Unmanaged<CurlTransfer>.fromOpaque(userData).takeUnretainedValue().didLeaveConnectionQueue() }
        return 0
    }

    private let curlPrereqCallback:
        @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32) -> Int32 = {
            userData, _, _, _, _ in
            if let userData { Unmanaged<CurlTransfer>.fromOpaque(userData).takeUnretainedValue().didConnect() }
            return 0
        }
#endif

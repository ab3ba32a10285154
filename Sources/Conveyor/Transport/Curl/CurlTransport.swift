#if os(Linux)
    import CConveyorCurl
    import Foundation
    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// A ``Transport`` that drives libcurl's multi interface itself, on Linux.
    ///
    /// One multi handle per client, driven by one thread — or, while nothing runs, by the thread
    /// that starts a request (``CurlMultiLoop``) — so connections
    /// (HTTP/1.1 keep-alive and HTTP/2 multiplexing) are shared by all of the client's requests.
    /// It does what URLSession's transport does — the same events, the same errors — minus
    /// corelibs' layer: no per-request delegate hops through an `OperationQueue`, no 401 hang, and
    /// TLS options corelibs cannot offer (custom authorities, pinning, opting out of validation).
    final class CurlTransport: Transport {
        /// Used by operations that were not created by a client.
        static let shared: CurlTransport? = (try? CurlLibrary.shared.get()).map {
            CurlTransport(library: $0, settings: Settings(sessionConfiguration: .default, tls: .default, route: .direct, library: $0))
        }

        let library: CurlLibrary
        let settings: Settings
        private let loop: CurlMultiLoop

        /// The multi handle's owner runs the transfers' events (see ``CurlMultiLoop``).
        var executor: any TransferExecutor { loop }

        /// `CONVEYOR_CURL_VERBOSE=1` makes libcurl describe every transfer on standard error
        /// (`CURLOPT_VERBOSE`): connections, TLS, headers — for debugging.
        static let verbose = ProcessInfo.processInfo.environment["CONVEYOR_CURL_VERBOSE"] == "1"

        init(library: CurlLibrary, settings: Settings) {
            self.library = library
            self.settings = settings
            loop = CurlMultiLoop(library: library, maximumConnectionsPerHost: settings.maximumConnectionsPerHost)
            // The session's additional credential headers are masked while the transport lives.
            SentSecrets.shared.pin(SentSecrets.values(ofHeaders: settings.additionalHeaders))
            SentSecrets.shared.pin(settings.proxySecrets)
        }

        func refusal(for request: URLRequest) -> ConveyorError? {
            do {
                _ = try route(for: request)
                return nil
            } catch {
                return error
            }
        }

        /// Where `request` goes, or why it cannot be sent: the one check behind ``refusal(for:)``
        /// and ``startTask(for:bodyFile:delegate:)``. The socket is looked at per request, on
        /// the caller's thread: a missing one is a typed error before anything is sent, not
        /// libcurl's "couldn't connect".
        private func route(for request: URLRequest) throws(ConveyorError) -> (url: URL, socketPath: String)? {
            if let name = settings.invalidAdditionalHeader { throw .invalidHeader(name: name) }
            if let error = settings.route.malformed { throw error }
            return try request.url.flatMap { url throws(ConveyorError) in try settings.route.socketTarget(for: url) }
        }

        // The plan's idle timeout is not read: operations run the idle timer, and libcurl's own
        // timeouts stay off.
        func startTask(
            for request: URLRequest, bodyFile: BodyFile.Snapshot?, plan: AttemptPlan, delegate: any TransportTaskDelegate
        ) -> any TransportTask {
            let socketTarget: (url: URL, socketPath: String)?
            do {
                socketTarget = try route(for: request)
            } catch {
                return RefusedTransportTask.refusing(error, delegate: delegate, on: loop)
            }
            var request = request
            // The stored cookies are read once, here, and sent as the request's own header.
            let stampedSecrets: [String]
            do {
                stampedSecrets = try settings.cookies.stamp(&request)
            } catch {
                return RefusedTransportTask.refusing(error, delegate: delegate, on: loop)
            }
            // The file is opened and checked here, on the caller's thread: no open (of a FIFO
            // swapped in, say) can block the loop thread, and a bad file fails before any send.
            let openFile: OpenBodyFile?
            do {
                openFile = try bodyFile.map { snapshot throws(ConveyorError) in try OpenBodyFile(snapshot) }
            } catch {
                return RefusedTransportTask.refusing(error, delegate: delegate, on: loop)
            }
            // What the transfer holds beyond its own body: the stamped cookies' values, pinned
            // until it completes.
            let release = AttemptRelease()
            release.pin(stampedSecrets)
            let transfer = CurlTransfer(
                request: request, bodyFile: openFile, delegate: delegate, release: release, settings: settings, library: library,
                socketTarget: socketTarget)
            loop.start(transfer)
            return CurlTransportTask(transfer: transfer, loop: loop)
        }

        var cookies: TransportCookies { settings.cookies }

        func invalidate() {
            loop.invalidate()
        }

        /// The client and every operation that used this transport are gone.
        deinit {
            invalidate()
            SentSecrets.shared.unpin(SentSecrets.values(ofHeaders: settings.additionalHeaders))
            SentSecrets.shared.unpin(settings.proxySecrets)
        }
    }

    /// A transfer seen through the ``TransportTask`` protocol.
    struct CurlTransportTask: TransportTask {
        let transfer: CurlTransfer
        let loop: CurlMultiLoop

        func cancel() { loop.cancel(transfer) }
        func pauseReceiving() { transfer.requestPause() }
        func resumeReceiving() { loop.unpause(transfer) }
    }

    extension CurlTransport {
        /// What the transport takes from the client's configuration, fixed at creation.
        struct Settings: Sendable {
            let cookies: TransportCookies
            let additionalHeaders: [String: String]
            /// The first additional header that fails the header check: every request is refused with it.
            let invalidAdditionalHeader: String?
            let maximumConnectionsPerHost: Int
            let tls: TLSConfiguration
            /// libcurl's pin list (`sha256//…;sha256//…`), nil without pins.
            let pins: String?
            /// The custom authorities' PEM text, nil without any.
            let authorities: Data?
            /// Why no HTTPS request can be trusted (a bad pin, an unreadable CA file), if so.
            let trustError: String?
            /// The Unix socket and address overrides.
            let route: RouteSettings
            /// The address overrides as libcurl's `CURLOPT_RESOLVE` list, nil without any.
            let resolveList: CurlStringList?

            init(sessionConfiguration: URLSessionConfiguration, tls: TLSConfiguration, route: RouteSettings, library: CurlLibrary) {
                self.route = route
                resolveList =
                    route.addressOverrides.isEmpty || route.malformed != nil
                    ? nil : CurlStringList(route.addressOverrides.map(\.curlEntry), library: library)
                cookies = TransportCookies(sessionConfiguration)
                var headers: [String: String] = [:]
                for (name, value) in sessionConfiguration.httpAdditionalHeaders ?? [:] {
                    if let name = name as? String { headers[name] = "\(value)" }
                }
                additionalHeaders = headers
                invalidAdditionalHeader = HTTPGrammar.firstInvalidFieldName(in: headers.map { ($0.key, $0.value) })
                maximumConnectionsPerHost = sessionConfiguration.httpMaximumConnectionsPerHost
                self.tls = tls
                var trustError = tls.invalidPinDescription()
                pins =
                    tls.pinnedPublicKeyHashes.isEmpty
                    ? nil
                    : tls.pinnedPublicKeyHashes
                        .map { $0.hasPrefix("sha256//") ? $0 : "sha256//\($0)" }.joined(separator: ";")
                do {
                    let pem = try tls.authorityPEM()
                    authorities = pem.isEmpty ? nil : pem
                } catch {
                    authorities = nil
                    if case .serverTrustFailed(_, let reason) = error { trustError = trustError ?? reason }
                }
                self.trustError = trustError
            }

            /// Sets the route options of `handle`: the Unix socket a request goes over (nil for
            /// TCP) and the address overrides. Set on every request, as a reused handle keeps them.
            /// Sets the route options of `handle` for a request to `host`.
            /// - Returns: Whether a proxy carries the request, as the metrics report it.
            @discardableResult
            func applyRoute(
                to handle: CurlLibrary.Handle, host: String, socketPath: String?, library: CurlLibrary
            ) -> TransferMetrics.ProxyRoute {
                library.setOption(handle, .unixSocketPath, socketPath)
                // libcurl reads the list when the transfer starts, into the multi handle's DNS
                // cache; the list itself lives as long as these settings.
                library.setOption(handle, .resolve, pointer: resolveList.map { UnsafeRawPointer($0.head) })
                // The request's own headers (its Authorization, cookies) never go to a proxy in a
                // CONNECT: they travel inside the tunnel (libcurl's default since 7.42.1, set anyway).
                library.setOption(handle, .headerOpt, CurlConstant.headerSeparate)
                let proxy = route.proxy
                // A socket is local: no proxy stands between the client and it. An empty
                // CURLOPT_PROXY turns the environment's proxy off; NULL lets libcurl read it.
                // A bypassed host too (decided here, comparing addresses: libcurl's NOPROXY
                // compares spellings, and sent [::ffff:7f00:1] — 127.0.0.1 — to the proxy).
                guard socketPath == nil, !proxy.isNone, !(proxy.server != nil && proxy.bypasses(host: host)) else {
                    library.setOption(handle, .proxy, "")
                    if socketPath == nil, let server = proxy.server { return .bypassed(proxy: server.description) }
                    return .direct
                }
                guard let server = proxy.server else { return .environment }
                library.setOption(handle, .proxy, server.description)
                library.setOption(handle, .noProxy, proxy.noProxyList)
                if let credentials = proxy.credentials {
                    library.setOption(handle, .proxyUserName, credentials.user)
                    library.setOption(handle, .proxyPassword, credentials.password)
                    if server.kind != .socks5 { library.setOption(handle, .proxyAuth, CurlConstant.authBasicOrDigest) }
                }
                if server.kind == .https {
                    // The proxy's certificate is checked like an origin's: the same authorities
                    // and switch (pins name origins' keys, so they are not applied to the proxy).
                    if tls.allowsInvalidCertificates {
                        library.setOption(handle, .proxySSLVerifyPeer, 0)
                        library.setOption(handle, .proxySSLVerifyHost, 0)
                    }
                    if !tls.trustsSystemCertificateAuthorities {
                        library.setOption(handle, .proxyCAInfo, nil)
                        library.setOption(handle, .proxyCAPath, nil)
                    }
                    if var authorities {
                        authorities.withUnsafeMutableBytes { bytes in
                            var blob = conveyor_curl_blob(data: bytes.baseAddress, len: bytes.count, flags: CurlConstant.blobCopy)
                            library.setOption(handle, .proxyCAInfoBlob, pointer: &blob)
                        }
                    }
                }
                return .proxy(server.description)
            }

            /// The proxy's credential values, masked (``SentSecrets``) while the transport lives.
            var proxySecrets: [String] {
                guard let credentials = route.proxy.credentials else { return [] }
                return SentSecrets.basicParts(user: credentials.user, password: credentials.password)
            }

            /// Sets the TLS options of `handle`.
            func applyTLS(to handle: CurlLibrary.Handle, library: CurlLibrary) {
                if tls.allowsInvalidCertificates {
                    library.setOption(handle, .sslVerifyPeer, 0)
                    library.setOption(handle, .sslVerifyHost, 0)
                }
                if let pins { library.setOption(handle, .pinnedPublicKey, pins) }
                if !tls.trustsSystemCertificateAuthorities {
                    // Without these, libcurl would still load the system bundle and directory.
                    library.setOption(handle, .caInfo, nil)
                    library.setOption(handle, .caPath, nil)
                }
                if var authorities {
                    authorities.withUnsafeMutableBytes { bytes in
                        // libcurl's struct curl_blob, mirrored in the C shim (`conveyor_curl_blob`).
                        // CURL_BLOB_COPY: libcurl copies the bytes before returning.
                        var blob = conveyor_curl_blob(data: bytes.baseAddress, len: bytes.count, flags: CurlConstant.blobCopy)
                        library.setOption(handle, .caInfoBlob, pointer: &blob)
                    }
                }
            }
        }
    }

    /// A `curl_slist` that libcurl reads but does not copy, freed with its owner.
    final class CurlStringList: Sendable {
        // Sendable: the list is built in init and never changed; libcurl only reads it.
        nonisolated(unsafe) let head: CurlLibrary.Handle
        private let library: CurlLibrary

        /// nil when `lines` is empty (libcurl's empty list is a null pointer) or memory ran out.
        init?(_ lines: [String], library: CurlLibrary) {
            var list: CurlLibrary.Handle?
            for line in lines {
                guard let appended = line.withCString({ library.slistAppend(list, $0) }) else {
                    library.slistFreeAll(list)
                    return nil
                }
                list = appended
            }
            guard let list else { return nil }
            head = list
            self.library = library
        }

        deinit { library.slistFreeAll(head) }
    }
#endif

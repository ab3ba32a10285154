import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Outbox {
    /// What one attempt's failure means for the item.
    enum Verdict {
        /// Final: report it and remove the item.
        case final(ConveyorError)
        /// Try again; `counts` when the server may have seen the request (an answer, or a
        /// connection lost mid-exchange); `delay` from `Retry-After`, nil for the backoff.
        case retry(counts: Bool, delay: TimeInterval?)
        /// The attempt was cancelled (the outbox closed, or someone cancelled the client's operations).
        case cancelled
    }

    /// Called once a consumer is registered: deliveries may begin.
    func start() {
        state.withLock { $0.started = true }
        queue.async { self.pump() }
    }

    /// Starts items while there is room, and hands over dead letters not reported yet. On `queue`.
    func pump() {
        let (starts, dead) = state.withLock { state -> ([OutboxItemName], [OutboxItemName]) in
            state.pumpQueued = false  // items accepted from now on queue another
            guard state.started, !state.closed else { return ([], []) }
            var starts: [OutboxItemName] = []
            while state.inFlight.count < max(1, configuration.maximumConcurrentDeliveries), state.head < state.pending.count {
                let name = state.pending[state.head]
                state.head += 1
                state.inFlight[name.id] = Delivery(name: name)
                starts.append(name)
            }
            // The taken front is dropped now and then, not on every item.
            if state.head > 1024, state.head * 2 > state.pending.count {
                state.pending.removeFirst(state.head)
                state.head = 0
            }
            defer { state.unreportedDead = [] }
            return (starts, state.unreportedDead)
        }
        for name in dead { reportDeadLetter(name) }
        for name in starts { load(name) }
    }

    /// Reads an item's record and checks its body; a file that cannot be read is set aside.
    private func load(_ name: OutboxItemName) {
        let stored: OutboxStoredItem
        var bytes: Int64
        do {
            // Never followed: a link could name any file the process can read.
            (stored, bytes) = try OutboxStoredItem.read(recordURL(name), expected: name)
        } catch let failure as DurableFiles.Failure where failure.code == ELOOP {
            return setAsideCorrupt(name, detail: "the record is a symbolic link")
        } catch let failure as DurableFiles.Failure where failure.code == EFBIG {
            return setAsideCorrupt(
                name, detail: "the record has more than the \(OutboxStoredItem.maximumFileSize) bytes a record can have; not read")
        } catch let corrupt as OutboxRecord.Corrupt where corrupt.isUnfinished {
            return setAsideCorrupt(name, detail: corrupt.description)  // begins "unfinished", as documented
        } catch {
            return setAsideCorrupt(name, detail: "unreadable record: \(error)")
        }
        if let length = stored.record.bodyLength, !stored.record.bodyInline {
            let bodyURL = name.url(.body, in: itemsDirectory)
            if DurableFiles.isSymbolicLink(bodyURL) { return setAsideCorrupt(name, detail: "the body file is a symbolic link") }
            let size = DurableFiles.size(of: bodyURL)
            guard size == length else {
                return setAsideCorrupt(name, detail: "the body file has \(size.map(String.init) ?? "no") bytes of \(length)")
            }
            bytes += length
        }
        state.withLock {
            $0.inFlight[name.id]?.stored = stored
            $0.inFlight[name.id]?.bytes = bytes
        }
        attempt(name)
    }

    /// Where an item's record is: `.reported` once its result was (maybe) handed over before a restart.
    func recordKind(_ name: OutboxItemName) -> OutboxItemName.Kind {
        state.withLock { $0.redelivered.contains(name.id) } ? .reported : .item
    }

    func recordURL(_ name: OutboxItemName) -> URL {
        name.url(recordKind(name), in: itemsDirectory)
    }

    /// Sends the item once — unless the network is down (it waits for it) or it is too old.
    func attempt(_ name: OutboxItemName) {
        let next = state.withLock { state -> OutboxStoredItem? in
            guard !state.closed, var delivery = state.inFlight[name.id], let stored = delivery.stored else { return nil }
            delivery.retryGeneration += 1
            delivery.waitsForRetry = false
            delivery.waitsForNetwork = state.offline
            state.inFlight[name.id] = delivery
            return state.offline ? nil : stored
        }
        guard let stored = next else { return }
        let age = Date().timeIntervalSince(stored.record.createdAt)
        if age > configuration.maximumAge {
            return moveToDeadLetters(name, stored, error: .outboxFailed(reason: .expired(age: age)))
        }
        let request: URLRequest
        do {
            request = try deliveryRequest(for: stored, name: name)
        } catch {
            return finish(name, stored, .failed(error as? ConveyorError ?? .outboxFailed(reason: .writeFailed(itemsDirectory, error))))
        }
        let operation = client.operation(
            HTTPRequestOperation.self, with: request,
            success: { [self] operation, _ in
                // The data serializer's value is the body itself.
                switch HTTPResponse<Data>.finished(operation, value: operation.responseData ?? Data()) {
                case .success(let response): finish(name, stored, .succeeded(response))
                case .failure(let error): handle(error, name, stored)
                }
            },
            failure: { [self] _, error in
                handle(error, name, stored)
            })
        operation.retryPolicy = .none  // the outbox retries, across restarts and with its own counts
        operation.responseSerializer = DataResponseSerializer()
        operation.callbackQueue = queue
        let stillOpen = state.withLock { state -> Bool in
            guard !state.closed, state.inFlight[name.id] != nil else { return false }
            state.inFlight[name.id]?.operation = operation
            return true
        }
        if stillOpen { client.enqueue(operation) }
    }

    /// The request of one attempt, built by the client's
    /// ``HTTPClient/request(method:path:parameters:headers:requestSerializer:)`` — a subclass's
    /// override included, so a signature (with its timestamp) is made for this attempt and
    /// never stored: the client's default headers and credentials as they are now, not when
    /// the item was written, then the stored headers, the body from the record or its file.
    private func deliveryRequest(for stored: OutboxStoredItem, name: OutboxItemName) throws -> URLRequest {
        let record = stored.record
        let headers = HTTPHeaders(uniqueFields: record.headers.map { (name: $0[0], value: $0[1]) })
        let body = OutboxStoredBody(source: try storedBody(stored, name: name))
        let request = try client.request(
            method: HTTPMethod(rawValue: record.method), path: record.url, headers: headers, requestSerializer: body)
        // An override that built the request with a serializer of its own dropped the stored body.
        return body.isMissing(from: request) ? body.attached(to: request) : request
    }

    /// The item's body: inline in the record, read from its file when small, or streamed from it.
    private func storedBody(_ stored: OutboxStoredItem, name: OutboxItemName) throws -> OutboxStoredBody.Source {
        if let inline = stored.inlineBody { return .data(inline) }
        guard let length = stored.record.bodyLength else { return .none }
        let bodyURL = name.url(.body, in: itemsDirectory)
        if length <= configuration.inMemoryBodyLimit { return .data(try DurableFiles.readFile(bodyURL, maximumBytes: length)) }
        return .file(try BodyFile.Snapshot(of: bodyURL))
    }

    /// Decides about a failed attempt. On `queue`.
    private func handle(_ error: ConveyorError, _ name: OutboxItemName, _ stored: OutboxStoredItem) {
        // Closed: the directory may have a new owner already; this one writes nothing more.
        guard !state.withLock({ $0.closed }) else { return }
        switch verdict(for: error) {
        case .final(let error):
            finish(name, stored, .failed(error))
        case .cancelled:
            // Someone cancelled the client's operations; the item is not given up for that.
            schedule(name, after: configuration.baseDelay)
        case .retry(let counts, let retryAfter):
            var stored = stored
            var failures = 0
            if counts {
                stored.record.attempts += 1
                stored.record.lastError = OutboxRecord.text(of: error)
                if stored.record.attempts >= configuration.maximumAttempts {
                    return moveToDeadLetters(
                        name, stored, error: .outboxFailed(reason: .attemptsExhausted(attempts: stored.record.attempts, lastError: error)))
                }
                // Not fatal when it fails (a full disk): the count is kept in memory and written next time.
                try? writeRecord(stored, as: name, kind: recordKind(name), in: itemsDirectory)
                failures = stored.record.attempts
            } else {
                failures = state.withLock { state -> Int in
                    state.inFlight[name.id]?.connectFailures += 1
                    return state.inFlight[name.id]?.connectFailures ?? 1
                }
            }
            let updated = stored
            state.withLock { $0.inFlight[name.id]?.stored = updated }
            let delay = retryAfter.map { Seconds.clamped($0, to: 0...configuration.maximumRetryAfter) } ?? backoff(after: failures)
            schedule(name, after: delay)
        }
    }

    /// Sorts a failure into final, retry (counted or not) and cancelled.
    func verdict(for error: ConveyorError) -> Verdict {
        switch error {
        case .unacceptableStatusCode(let code, let response, _):
            guard configuration.retryableStatusCodes.contains(code) else { return .final(error) }
            return .retry(counts: true, delay: RetryPolicy.retryAfter(response))
        case .network(let urlError):
            if urlError.code == .cancelled { return .cancelled }
            if error.connectivityFailure == .notConnected { return .retry(counts: false, delay: nil) }
            if Self.midExchangeCodes.contains(urlError.code) { return .retry(counts: true, delay: nil) }
            return .final(error)
        case .cancelled:
            return .cancelled
        case .timedOut, .credentialRefreshFailed, .serverTrustFailed:
            // A timeout may have reached the server; a refresh or a trust failure after a long
            // offline spell (a captive portal) may clear. Each counts, so none loops forever.
            return .retry(counts: true, delay: nil)
        case .authenticationFailed:
            // A 401 the client could not answer (a `Basic` challenge without a credential, or
            // one it refused): a 4xx like any other, final. Retrying sends the same request.
            return .final(error)
        default:
            return .final(error)
        }
    }

    /// Failures after which the server may have seen the request.
    static let midExchangeCodes: Set<URLError.Code> = [.networkConnectionLost, .timedOut, .badServerResponse, .zeroByteResource]

    /// `baseDelay × 2^(failures−1)` up to ``Configuration/maximumDelay``, times 0.5…1.
    func backoff(after failures: Int) -> TimeInterval {
        Backoff.delay(base: configuration.baseDelay, doublings: failures - 1, cap: configuration.maximumDelay)
    }

    /// Arms the next attempt; a return of the network brings it forward.
    func schedule(_ name: OutboxItemName, after delay: TimeInterval) {
        let scheduled = state.withLock { state -> (generation: Int, atOnce: Bool)? in
            guard !state.closed, var delivery = state.inFlight[name.id] else { return nil }
            delivery.retryGeneration += 1
            delivery.waitsForRetry = true
            delivery.operation = nil
            let atOnce = delivery.retriesAtOnce
            delivery.retriesAtOnce = false
            state.inFlight[name.id] = delivery
            return (delivery.retryGeneration, atOnce)
        }
        guard let (generation, atOnce) = scheduled else { return }
        // `retryNow()` asked while this attempt was under way.
        queue.asyncAfter(deadline: Seconds.dispatchTime(after: atOnce ? 0 : delay)) { [weak self] in
            // A newer schedule, or the network's return, made this one stale.
            guard let self, self.state.withLock({ $0.inFlight[name.id]?.retryGeneration == generation }) else { return }
            self.attempt(name)
        }
    }

    /// Tries every item that waits for its next attempt now, its connection backoff reset —
    /// for when you know the server is back (a push, a person's "Send now", the app returning to
    /// the foreground). Reachability does not change when only the server was down, so after a
    /// long outage an item otherwise waits out its current backoff (up to
    /// ``Configuration/maximumDelay``, 300 s by default) before its next attempt. An item whose
    /// attempt is under way is tried again at once if that attempt fails; items wait on while
    /// reachability says the host is unreachable. A `Retry-After` the server sent is not waited
    /// for either: you asked. Returns at once; does nothing once closed.
    public func retryNow() {
        queue.async { [self] in
            let wake = state.withLock { state -> [OutboxItemName] in
                guard !state.closed, !state.offline else { return [] }
                var wake: [OutboxItemName] = []
                for (id, delivery) in state.inFlight {
                    if delivery.waitsForRetry {
                        state.inFlight[id]?.connectFailures = 0
                        if delivery.stored != nil { wake.append(delivery.name) }
                    } else if !delivery.waitsForNetwork {
                        state.inFlight[id]?.retriesAtOnce = true
                    }
                }
                return wake
            }
            for name in wake.sorted() { attempt(name) }
            pump()
        }
    }

    /// Reachability changed: offline pauses new attempts; back online, every waiting item is
    /// tried at once with its connection backoff reset. On `queue`.
    func reachabilityChanged(to status: NetworkReachabilityManager.Status) {
        let wake = state.withLock { state -> [OutboxItemName] in
            state.offline = status == .notReachable
            guard !state.offline, !state.closed else { return [] }
            var wake: [OutboxItemName] = []
            for (id, delivery) in state.inFlight where delivery.waitsForNetwork || delivery.waitsForRetry {
                state.inFlight[id]?.waitsForNetwork = false
                state.inFlight[id]?.connectFailures = 0
                if delivery.stored != nil { wake.append(delivery.name) }
            }
            return wake
        }
        for name in wake.sorted() { attempt(name) }
        pump()
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Outbox {
    /// Where an accepted item's body comes from.
    enum BodySource {
        case none
        case data(Data)
        case file(URL)
        case multipart(MultipartFormData)
    }

    /// Accepts a request whose parameters are encoded by `requestSerializer` (the client's by
    /// default), as ``HTTPClient/request(method:path:parameters:headers:requestSerializer:)``
    /// builds it, on the calling thread. Returns once the item is on disk, synced; never waits
    /// for the network. Its `fsync`s (one, or two with a body over 64 KiB; one more on Apple
    /// platforms) run on the calling thread: from a Task, use
    /// ``send(method:path:parameters:headers:requestSerializer:)``, which does them off Swift
    /// Concurrency's pool. (A name of its own: with the same name, top-level code picked this
    /// form even under `await`.)
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against the client's base URL now; the item keeps the absolute URL.
    ///   - parameters: Encoded now; nil for none.
    ///   - headers: Stored with the item (do not pass credentials here: the client's
    ///     authenticator and default headers are added at each attempt instead). An
    ///     `Idempotency-Key` given here replaces the generated one.
    ///   - requestSerializer: Overrides the client's serializer; nil uses it.
    /// - Returns: The item's identifier, also in its `Idempotency-Key`.
    /// - Throws: ``ConveyorError``: a bad path or parameters, or
    ///   ``ConveyorError/outboxFailed(reason:)`` for a limit, a full disk or a closed outbox —
    ///   then nothing was accepted, and nothing accepted before is harmed.
    @discardableResult
    public func sendSynchronously(
        method: HTTPMethod, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil
    ) throws -> UUID {
        let request = try HTTPClient.wrappingEncoderErrors {
            try (requestSerializer ?? client.requestSerializer).serialize(bareRequest(method, path, headers), parameters: parameters)
        }
        return try accept(request, body: request.httpBody.map(BodySource.data) ?? .none)
    }

    /// Accepts a request whose body is an `Encodable` value, encoded now by `requestSerializer`
    /// (the client's by default). Returns once the item is on disk, synced.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against the client's base URL now.
    ///   - body: Encoded now (for example as JSON with ``RequestSerializer/json``).
    ///   - headers: Stored with the item; no credentials here (see ``sendSynchronously(method:path:parameters:headers:requestSerializer:)``).
    ///   - requestSerializer: Overrides the client's serializer; nil uses it.
    /// - Returns: The item's identifier.
    /// - Throws: ``ConveyorError``, as ``sendSynchronously(method:path:parameters:headers:requestSerializer:)``.
    @discardableResult
    public func sendSynchronously<Body: Encodable>(
        method: HTTPMethod, path: String, body: Body, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil
    ) throws -> UUID {
        let request = try HTTPClient.wrappingEncoderErrors {
            try (requestSerializer ?? client.requestSerializer).serialize(bareRequest(method, path, headers), encodable: body)
        }
        return try accept(request, body: request.httpBody.map(BodySource.data) ?? .none)
    }

    /// Accepts a `multipart/form-data` request: `parameters` become fields, then the parts
    /// `constructingBody` appends. The body is written to the outbox's directory part by part
    /// (files are read, never held in memory whole) and synced.
    /// - Parameters:
    ///   - method: The method; default `POST`.
    ///   - path: Resolved against the client's base URL now.
    ///   - parameters: Fields sent before the appended parts; nil for none.
    ///   - headers: Stored with the item; no credentials here.
    ///   - constructingBody: Appends parts.
    /// - Returns: The item's identifier.
    /// - Throws: ``ConveyorError/multipartEncodingFailed(reason:)`` for a bad part, or as
    ///   ``sendSynchronously(method:path:parameters:headers:requestSerializer:)``.
    @discardableResult
    public func sendSynchronously(
        method: HTTPMethod = .post, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        constructingBody: (MultipartFormData) throws -> Void
    ) throws -> UUID {
        let (request, form) = try multipartRequest(method, path, parameters, headers, constructingBody)
        return try accept(request, body: .multipart(form))
    }

    /// The multipart request and its form, parts appended.
    func multipartRequest(
        _ method: HTTPMethod, _ path: String, _ parameters: Parameters?, _ headers: HTTPHeaders,
        _ constructingBody: (MultipartFormData) throws -> Void
    ) throws -> (URLRequest, MultipartFormData) {
        var request = try bareRequest(method, path, headers)
        let form = MultipartFormData()
        for (name, value) in try QueryStringEncoder().pairs(for: parameters ?? [:]) {
            form.append(value ?? "", name: name)
        }
        try constructingBody(form)
        request.setHeader(form.contentType, for: "Content-Type")
        return (request, form)
    }

    /// Accepts a request whose body is the file at `fileURL`, copied into the outbox now (the
    /// original may be changed or deleted once this returns).
    /// - Parameters:
    ///   - method: The method; default `POST`.
    ///   - path: Resolved against the client's base URL now.
    ///   - fileURL: A readable regular file.
    ///   - headers: Stored with the item; `Content-Type` defaults to the file extension's type.
    /// - Returns: The item's identifier.
    /// - Throws: ``ConveyorError/OutboxFailureReason/bodyFileUnreadable(_:)``, or as
    ///   ``sendSynchronously(method:path:parameters:headers:requestSerializer:)``.
    @discardableResult
    public func sendSynchronously(method: HTTPMethod = .post, path: String, fileURL: URL, headers: HTTPHeaders = [:]) throws -> UUID {
        try accept(fileRequest(method, path, fileURL, headers), body: .file(fileURL))
    }

    /// The request of a file body; `Content-Type` from the extension unless given.
    func fileRequest(_ method: HTTPMethod, _ path: String, _ fileURL: URL, _ headers: HTTPHeaders) throws -> URLRequest {
        var request = try bareRequest(method, path, headers)
        if headers["Content-Type"] == nil { request.setHeader(MIMEType.forPath(fileURL.lastPathComponent), for: "Content-Type") }
        return request
    }

    /// The request with only what belongs to the item: no default headers, no credentials —
    /// the client's one builder without its defaults. The client's
    /// ``HTTPClient/request(method:path:parameters:headers:requestSerializer:)`` (and a
    /// subclass's override of it) runs at each delivery instead, so what it adds (a signature,
    /// a timestamp, a credential) is fresh on every attempt and never written to disk.
    func bareRequest(_ method: HTTPMethod, _ path: String, _ headers: HTTPHeaders) throws -> URLRequest {
        try client.baseRequest(method: method, path: path, headers: headers, includingDefaults: false).0
    }

    /// Writes the item — body first, then its record in place under its final name, each
    /// synced (on systems other than Linux, the directory too) — and puts it in line. A crash
    /// before the record is whole leaves a body the next start removes, or a record without its
    /// end mark, which is set aside and reported as unfinished when its turn comes (`send` had
    /// not returned its identifier); once it is whole, the item is complete. Runs on the
    /// caller's thread.
    func accept(_ request: URLRequest, body: BodySource) throws -> UUID {
        guard let url = request.url, let method = request.httpMethod else {
            throw ConveyorError.invalidURL(path: request.url?.absoluteString ?? "", baseURL: client.baseURL)
        }
        guard HTTPGrammar.isToken(method) else { throw ConveyorError.invalidMethod(method) }
        let id = UUID()
        var fields = (request.allHTTPHeaderFields ?? [:]).filter { !$0.key.equalsIgnoringASCIICase("Content-Length") }
        let key: String
        if let given = fields.first(where: { $0.key.equalsIgnoringASCIICase("Idempotency-Key") }) {
            key = given.value
        } else {
            // An RFC 8941 String, as the IETF httpapi draft has it: the UUID in double quotes.
            key = "\"\(id.uuidString.lowercased())\""
            fields["Idempotency-Key"] = key
        }
        if let bad = HTTPGrammar.firstInvalidFieldName(in: fields) { throw ConveyorError.invalidHeader(name: bad) }
        let length = try bodyLength(body)
        let inline = try inlineBody(body, length: length)
        var record = OutboxRecord(
            id: id, idempotencyKey: key, createdAt: Date(), method: method, url: url.absoluteString,
            headers: fields.sorted { $0.key < $1.key }.map { [$0.key, $0.value] }, bodyLength: inline.map { Int64($0.count) } ?? length,
            bodyInline: inline != nil, attempts: 0)
        // From here to its return the send is file work `close()` waits for: it either completes
        // before `close()` returns or throws `closed` now.
        try beginFileWork()
        defer { fileWork.leave() }
        let sequence = try reserve(bytes: length ?? 0)
        let name = OutboxItemName(sequence: sequence, id: id)
        let bodyURL = name.url(.body, in: itemsDirectory)
        let onDisk: Int64
        do {
            if inline == nil { record.bodyLength = try writeBody(body, to: bodyURL) ?? length }
            let recordBytes = try writeNewRecord(OutboxStoredItem(record: record, inlineBody: inline), as: name)
            onDisk = recordBytes + (inline == nil ? record.bodyLength ?? 0 : 0)
        } catch {
            DurableFiles.remove(bodyURL)
            unreserve(bytes: length ?? 0)
            if let failure = error as? DurableFiles.Failure {
                throw ConveyorError.outboxFailed(reason: .writeFailed(failure.url, failure.error))
            }
            throw error
        }
        // The limit was checked against the body; what counts from now on is what was written
        // (what ``diskBytes(_:in:)`` finds, without three `stat`s).
        state.withLock { $0.bytes += onDisk - (length ?? 0) }
        enqueueAccepted(name)
        return id
    }

    private func bodyLength(_ body: BodySource) throws -> Int64? {
        switch body {
        case .none: return nil
        case .data(let data): return Int64(data.count)
        case .multipart(let form): return form.contentLength
        case .file(let url):
            guard url.isFileURL, let size = DurableFiles.size(of: url, followingLinks: true),
                FileManager.default.isReadableFile(atPath: url.path)
            else {
                throw ConveyorError.outboxFailed(reason: .bodyFileUnreadable(url))
            }
            return size
        }
    }

    /// The body, when it is small enough to live inside the record file.
    private func inlineBody(_ body: BodySource, length: Int64?) throws -> Data? {
        guard let length, length <= OutboxStoredItem.inlineBodyLimit else { return nil }
        switch body {
        case .none: return nil
        case .data(let data): return data
        case .multipart(let form): return try form.encode()
        case .file(let url):
            do {
                return try Data(contentsOf: url)
            } catch {
                throw ConveyorError.outboxFailed(reason: .bodyFileUnreadable(url))
            }
        }
    }

    /// Writes and syncs the body; returns the bytes written when they may differ from the announced length.
    private func writeBody(_ body: BodySource, to url: URL) throws -> Int64? {
        switch body {
        case .none:
            return nil
        case .data(let data):
            try DurableFiles.create(url, contents: data)
            return nil
        case .file(let source):
            return try DurableFiles.copy(source, to: url)
        case .multipart(let form):
            do {
                try form.writeEncodedData(to: url)
            } catch ConveyorError.multipartEncodingFailed(.bodyFileWriteFailed(_, let error)) {
                throw ConveyorError.outboxFailed(reason: .writeFailed(url, error))
            }
            try DurableFiles.sync(url)
            return nil
        }
    }

    /// Writes a new item's record in place under its final name, synced, its name made durable:
    /// no temporary file, rename or (on Linux) directory sync, because its end mark tells a
    /// finished record from one a crash cut short (``OutboxStoredItem``).
    /// - Returns: The record's size in bytes.
    private func writeNewRecord(_ stored: OutboxStoredItem, as name: OutboxItemName) throws(DurableFiles.Failure) -> Int64 {
        let url = name.url(.item, in: itemsDirectory)
        guard let data = try? stored.encoded() else { throw DurableFiles.Failure(url: url, code: EINVAL) }
        guard data.count <= OutboxStoredItem.maximumFileSize else { throw DurableFiles.Failure(url: url, code: EFBIG) }
        try DurableFiles.createInPlace(url, contents: data)
        return Int64(data.count)
    }

    /// Writes `stored` as `name`'s record (`kind`: `.item`, or `.reported` for one being handed
    /// over) in `directory`: a synced temporary file renamed into place, then the directory
    /// synced. Replaces an existing record atomically.
    func writeRecord(
        _ stored: OutboxStoredItem, as name: OutboxItemName, kind: OutboxItemName.Kind = .item, in directory: URL
    ) throws(DurableFiles.Failure) {
        let temporary = directory.appendingPathComponent(".tmp-" + name.stem + "-" + UUID().uuidString.prefix(8))
        guard let data = try? stored.encoded() else { throw DurableFiles.Failure(url: temporary, code: EINVAL) }
        do {
            try DurableFiles.create(temporary, contents: data)
            try DurableFiles.move(temporary, to: name.url(kind, in: directory))
        } catch {
            DurableFiles.remove(temporary)
            throw error
        }
        try DurableFiles.syncDirectory(directory)
    }

    /// The highest sequence number among the dead letters' names: 0 when there are none, and
    /// the top of the range when `dead/` cannot be read (so the send is refused, as before).
    func highestDeadSequence() -> UInt64 {
        var highest: UInt64 = 0
        let listed = try? DurableFiles.forEachName(in: deadDirectory) { fileName in
            if let (name, _) = OutboxItemName.parse(fileName) { highest = max(highest, name.sequence) }
        }
        return listed == nil ? OutboxItemName.maximumSequence : highest
    }

    /// Takes a place in line within the limits; returns its sequence number.
    func reserve(bytes: Int64) throws -> UInt64 {
        try state.withLock { state throws(ConveyorError) -> UInt64 in
            guard !state.closed else { throw ConveyorError.outboxFailed(reason: .closed) }
            guard state.count < configuration.maximumItemCount else {
                throw ConveyorError.outboxFailed(reason: .itemLimitReached(limit: configuration.maximumItemCount))
            }
            // Checked, never trapping: `maximumSequence` is far beyond any real count, and a
            // directory whose names pass it has them set aside when it is opened. Only a name
            // planted at the top of the range gets here; once the line is empty, numbering
            // starts again above the dead letters (a retried letter must sort after its old
            // name), so the directory is not refused for ever. Listing `dead/` under the lock
            // is acceptable on this path alone.
            if state.nextSequence > OutboxItemName.maximumSequence, state.count == 0, state.inFlight.isEmpty {
                state.nextSequence = highestDeadSequence() + 1
            }
            guard state.nextSequence <= OutboxItemName.maximumSequence else {
                throw ConveyorError.outboxFailed(reason: .writeFailed(itemsDirectory, POSIXError(.EOVERFLOW)))
            }
            guard bytes <= configuration.maximumBytes - state.bytes else {
                throw ConveyorError.outboxFailed(reason: .byteLimitReached(limit: configuration.maximumBytes, bytes: bytes))
            }
            state.count += 1
            state.bytes += bytes
            defer { state.nextSequence += 1 }
            return state.nextSequence
        }
    }

    /// Gives back a place that was not used.
    func unreserve(bytes: Int64) {
        state.withLock {
            $0.count -= 1
            $0.bytes -= bytes
        }
    }

    /// Puts a written item in line (in sequence order: sends from several threads may finish
    /// out of order) and starts it if there is room: one `pump()` is queued for a burst of
    /// sends, none before a consumer is registered (``start()`` queues one then).
    func enqueueAccepted(_ name: OutboxItemName) {
        let wakes = state.withLock { state -> Bool in
            if state.pending.last.map({ $0 < name }) ?? true {
                state.pending.append(name)
            } else {
                var low = state.head
                var high = state.pending.count
                while low < high {
                    let middle = (low + high) / 2
                    if state.pending[middle] < name { low = middle + 1 } else { high = middle }
                }
                state.pending.insert(name, at: low)
            }
            guard state.started, !state.pumpQueued else { return false }
            state.pumpQueued = true
            return true
        }
        if wakes { queue.async { self.pump() } }
    }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Conveyor's HTTP response cache (RFC 9111), in memory and on disk, used on every platform.
///
/// On Linux corelibs URLSession never writes to `URLCache`, and its lookup key ignores the
/// query string; so Conveyor turns the transport's `URLCache` off and caches itself. A client
/// uses ``HTTPClient/Configuration/cache`` (``shared`` by default); each operation's
/// ``HTTPRequestOperation/cachePolicy`` decides how it is used.
///
/// What is stored: `GET` and `HEAD` responses of any final status (304 aside) with an
/// explicit lifetime (`max-age`, `Expires`; `s-maxage` when ``isShared``), and with status 200,
/// 203, 204, 300, 301, 308, 404, 405, 410, 414 or 501, or `public`, also with only a validator
/// (`ETag`, `Last-Modified`); a 206 of one byte range as a part that answers `Range` requests
/// inside it; a `POST` response with an explicit lifetime and its own URL as `Content-Location`,
/// as that URL's `GET` response — and no `no-store` (in the request; in the response unless
/// `must-understand` with a status the cache understands), no `private` when ``isShared``,
/// no `Vary: *`, and no
/// `Authorization` in the request — sent by the caller, or added by the transport answering a
/// challenge with a credential — unless the response says `public`, `s-maxage` or
/// `must-revalidate` (RFC 9111 §3.5). `Set-Cookie` is never stored. The cache decides on the
/// request as sent: cookies from the client's cookie storage are part of it, so `Vary: Cookie`
/// tells users apart. Entries larger than 5% of the larger capacity are not kept. A
/// successful `POST`, `PUT`, `PATCH` or `DELETE` removes the stored responses of its URL.
///
/// A response with `Vary` is one variant of its URL: each variant is kept (up to
/// ``maximumVariantsPerURL``, the most recently stored first), and a request is answered by
/// the variant whose `Vary`-named request headers it sends with the same values — so
/// `Accept-Language: en`, `fr`, `en` costs two network requests, not three.
///
/// Thread-safe; several caches (and clients) may share one directory.
public final class HTTPCache: Sendable {
    /// How a request uses the cache.
    public enum Policy: Sendable, Equatable {
        /// RFC 9111: a fresh entry answers; a stale one with validators is revalidated
        /// (`If-None-Match` / `If-Modified-Since`; a 304 returns the stored body as a 200).
        case useProtocolCachePolicy
        /// Always loads from the network (the response may still be stored).
        case reloadIgnoringCache
        /// Any stored entry answers, however stale; the network only on a miss.
        case returnCacheElseLoad
        /// Only stored entries answer; a miss fails with `URLError(.resourceUnavailable)`.
        case returnCacheDontLoad
        /// As ``useProtocolCachePolicy`` while the client's host is reachable; while
        /// ``HTTPClient/reachabilityStatus`` is `.notReachable`, or when the network fails
        /// to connect, any stored entry answers, however stale.
        case returnCacheDataWhenUnreachable

        /// The policy matching a `URLRequest.CachePolicy`; nil for `.useProtocolCachePolicy`
        /// (the request then uses the operation's or client's policy).
        init?(_ policy: URLRequest.CachePolicy) {
            switch policy {
            case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData, .reloadRevalidatingCacheData:
                self = .reloadIgnoringCache
            case .returnCacheDataElseLoad: self = .returnCacheElseLoad
            case .returnCacheDataDontLoad: self = .returnCacheDontLoad
            default: return nil
            }
        }
    }

    /// Where a response came from.
    public enum ResponseSource: Sendable, Equatable {
        /// The server sent it.
        case network
        /// A stored entry answered without asking the server.
        case cache
        /// The server answered a conditional request with `304 Not Modified`; the stored body was returned.
        case revalidatedCache
        /// A stored response the server did not confirm answered because the exchange failed: the
        /// connection failed before any response byte (refused, reset, closed without a reply, a
        /// transport timeout; RFC 9111 §4.2.4, see ``HTTPCache/answersStaleWhenDisconnected``),
        /// or `stale-if-error` (RFC 5861 §4) covered a failure or a 500, 502, 503 or 504, or
        /// ``Policy/returnCacheDataWhenUnreachable``'s request failed to connect. The response
        /// may be stale: show it as such (an "offline" note) where that matters.
        case staleOnError
    }

    /// The process-wide cache: what clients (``HTTPClient/Configuration/cache``) and image
    /// downloaders created from now on use unless told otherwise. Starts as 4 MB in memory and
    /// 20 MB on disk in ``defaultDirectory``. Set it once at start-up, as
    /// `NSURLCache.setSharedURLCache` was:
    ///
    /// ```swift
    /// HTTPCache.shared = HTTPCache(memoryCapacity: 4 * 1024 * 1024, diskCapacity: 20 * 1024 * 1024)
    /// ```
    ///
    /// Clients and downloaders created before keep the cache they were given.
    public static var shared: HTTPCache {
        get { sharedCache.withLock { $0 } }
        set { sharedCache.withLock { $0 = newValue } }
    }
    private static let sharedCache = Lock(HTTPCache(memoryCapacity: 4_000_000, diskCapacity: 20_000_000))

    /// The default disk location.
    public static var defaultDirectory: URL {
        let base = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("Conveyor/HTTPCache", isDirectory: true)
    }

    /// Status codes a response may be stored with on a validator or a heuristic lifetime alone
    /// (RFC 9110 §15.1's heuristically cacheable codes, less 206: a part is stored only with an
    /// explicit lifetime). Any other final status is stored only with an explicit lifetime or `public`.
    static let heuristicallyCacheableStatusCodes: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The status codes whose semantics the cache knows (RFC 9110 §15), for `must-understand`
    /// (RFC 9111 §5.2.2.3): a response with it is stored only with one of these.
    static let understoodStatusCodes: Set<Int> = Set(200...206).union(300...305).union([307, 308]).union(400...417)
        .union(421...426).union([428, 429, 431, 451]).union(500...505).union([511])

    /// The most bytes kept in memory.
    public let memoryCapacity: Int
    /// The most bytes kept on disk; 0 for a memory-only cache.
    public let diskCapacity: Int
    /// The directory of the disk layer; nil for a memory-only cache (a disk capacity of 0).
    public let directory: URL?
    /// Whether the cache behaves as a shared cache (`private` responses are not stored,
    /// `s-maxage` applies). Default false: a client's cache is private to its user.
    public let isShared: Bool
    /// Whether a stale stored response answers when the origin cannot be reached — the
    /// connection refused, reset, closed or timed out before any response byte — as RFC 9111
    /// §4.2.4 allows a disconnected cache (reported as ``ResponseSource/staleOnError``). A stored
    /// response that forbids it (`must-revalidate`, `no-cache`; in a shared cache also
    /// `proxy-revalidate` and `s-maxage`) gives a 504 instead:
    /// ``ConveyorError/unacceptableStatusCode(_:response:data:)`` with a `504 Gateway Timeout` the
    /// cache made, never the stored response (§5.2.2.2). A request that limits the age it takes
    /// (`no-cache`, `max-age`, `min-fresh`) gets the transport's error. Default true; false
    /// leaves the transport's error in every case but `stale-if-error` and the offline policy.
    public let answersStaleWhenDisconnected: Bool

    /// The most variants (responses with `Vary` that differ in the named request headers)
    /// kept for one method and URL; storing another drops the least recently stored.
    public static let maximumVariantsPerURL = 8

    /// The variants of each method and URL, newest first.
    private let memory: LRUCache<String, [CachedResponse]>
    /// Serializes the read-modify-write of a URL's variants in ``store(_:)``.
    private let storeLock = Lock(())
    /// The stored responses being revalidated in the background (`stale-while-revalidate`).
    let backgroundRevalidations = Lock<Set<String>>([])
    private let disk: HTTPCacheDiskStore?
    /// Disk writes happen here, off the caller's path; reads are synchronous.
    private let diskQueue = DispatchQueue(label: "Conveyor.HTTPCache.disk", qos: .utility)

    /// Creates a cache.
    /// - Parameters:
    ///   - memoryCapacity: Bytes kept in memory (least recently used entries go first). Default 4 MB.
    ///   - diskCapacity: Bytes kept on disk; 0 makes a memory-only cache. Default 20 MB.
    ///   - directory: Where entries are written; nil (the default) is ``defaultDirectory``, as
    ///     `NSURLCache`'s `diskPath: nil` was. The directory is created if needed; entries
    ///     already in it are used.
    ///   - isShared: Whether to behave as a shared cache. Default false.
    ///   - answersStaleWhenDisconnected: Whether a stale stored response answers when the origin
    ///     cannot be reached (see ``answersStaleWhenDisconnected``). Default true.
    public init(
        memoryCapacity: Int = 4_000_000, diskCapacity: Int = 20_000_000, directory: URL? = nil, isShared: Bool = false,
        answersStaleWhenDisconnected: Bool = true
    ) {
        let directory = diskCapacity > 0 ? directory ?? Self.defaultDirectory : nil
        self.memoryCapacity = max(0, memoryCapacity)
        self.diskCapacity = directory == nil ? 0 : diskCapacity
        self.directory = directory
        self.isShared = isShared
        self.answersStaleWhenDisconnected = answersStaleWhenDisconnected
        self.memory = LRUCache(costLimit: self.memoryCapacity)
        self.disk = directory.map { HTTPCacheDiskStore(directory: $0, capacity: max(0, diskCapacity)) }
    }

    /// The largest body stored: 5% of the larger capacity (as `URLCache` does), so a large
    /// download is streamed through instead of being held to be cached.
    var maximumEntrySize: Int { max(memoryCapacity, diskCapacity) / 20 }

    // MARK: - Public API

    /// The stored response that would answer `request`, fresh or not; nil when none matches
    /// its method, URL and `Vary`-named headers.
    /// - Parameter request: A `GET` or `HEAD` request.
    /// - Returns: The entry, or nil.
    public func cachedResponse(for request: URLRequest) -> CachedResponse? {
        guard let url = request.url else { return nil }
        let method = (request.httpMethod ?? "GET").uppercased()
        let keys =
            method == "HEAD"
            ? [CachedResponse.key(method: "HEAD", url: url), CachedResponse.key(method: "GET", url: url)]
            : [CachedResponse.key(method: method, url: url)]
        for key in keys {
            guard let entry = variants(forKey: key)?.first(where: { $0.matchesVary(of: request) }) else { continue }
            if method == "HEAD" && entry.method == "GET" {
                var headOnly = entry
                headOnly.data = Data()
                return headOnly
            }
            return entry
        }
        return nil
    }

    /// Stores `response` as the answer to requests for its method and URL. A response without
    /// `Vary` replaces everything stored for them; one with `Vary` replaces the variant with the
    /// same `Vary`-named request header values and keeps the others (up to
    /// ``maximumVariantsPerURL``). Storage rules are not applied: this is the caller's explicit choice.
    /// - Parameter response: The entry.
    public func store(_ response: CachedResponse) {
        let key = response.key
        let names = response.varyNameSet
        storeLock.withLock { _ in
            var variants = [response]
            if !names.isEmpty {
                // Variants of another Vary (the server changed it) no longer describe the resource.
                let kept = (self.variants(forKey: key) ?? []).filter {
                    $0.varyNameSet == names && $0.varyingRequestHeaders != response.varyingRequestHeaders
                }
                variants += kept.prefix(Self.maximumVariantsPerURL - 1)
            }
            memory.setValue(variants, forKey: key, cost: Self.cost(of: variants))
            if let disk {
                diskQueue.async { [variants] in disk.write(variants, key: key) }
            }
        }
    }

    /// Freshens the stored `GET` response a `HEAD` response describes (RFC 9111 §4.3.5): when
    /// their validators agree (the same strong `ETag`, or the same `Last-Modified`, or neither
    /// with the same `Content-Length`), the stored header fields are updated as a 304 would.
    func freshenStoredGET(with head: HTTPResponseHead, for request: URLRequest, requestDate: Date) {
        guard let url = request.url else { return }
        let key = CachedResponse.key(method: "GET", url: url)
        guard let stored = variants(forKey: key)?.first(where: { $0.matchesVary(of: request) }) else { return }
        let etag = head.value(forHTTPHeaderField: "ETag")
        let modified = head.value(forHTTPHeaderField: "Last-Modified")
        let agree: Bool
        if let etag, let storedETag = stored.headers["ETag"] {
            agree = etag == storedETag && !etag.hasPrefix("W/")
        } else if let modified, let storedModified = stored.headers["Last-Modified"] {
            agree = modified == storedModified
        } else {
            agree =
                etag == nil && modified == nil && stored.headers["ETag"] == nil && stored.headers["Last-Modified"] == nil
                && head.value(forHTTPHeaderField: "Content-Length") == stored.headers["Content-Length"]
        }
        guard agree else { return }
        store(stored.refreshed(with: head, requestDate: requestDate, responseDate: Date()))
    }

    /// Removes the stored `GET` and `HEAD` responses for `url`.
    /// - Parameter url: The URL, query included.
    public func remove(for url: URL) {
        for method in ["GET", "HEAD"] {
            let key = CachedResponse.key(method: method, url: url)
            _ = memory.removeValue(forKey: key)
            if let disk { diskQueue.sync { disk.remove(key: key) } }
        }
    }

    /// Removes every entry, in memory and on disk.
    public func removeAll() {
        memory.removeAll()
        if let disk { diskQueue.sync { disk.removeAll() } }
    }

    /// Bytes held in memory: each entry's body, header names and values, URL and `Vary` values,
    /// plus a fixed overhead per entry and per field for the structures that hold them.
    public var currentMemoryUsage: Int { memory.totalCost }

    /// Bytes held on disk, once pending writes are done.
    public var currentDiskUsage: Int {
        guard let disk else { return 0 }
        return diskQueue.sync { disk.totalSize }
    }

    /// Waits until every disk write issued so far is done (tests and orderly shutdown).
    public func flush() {
        diskQueue.sync {}
    }

    // MARK: - Internal

    private func variants(forKey key: String) -> [CachedResponse]? {
        if let variants = memory.value(forKey: key) { return variants }
        guard let disk, let variants = disk.read(key: key) else { return nil }
        memory.setValue(variants, forKey: key, cost: Self.cost(of: variants))
        return variants
    }

    /// Memory cost of one URL's variants: what each holds (``CachedResponse/memoryCost``) and the key.
    static func cost(of variants: [CachedResponse]) -> Int {
        variants.reduce(variants.first.map { $0.key.utf8.count + CachedResponse.fieldOverhead } ?? 0) { $0 + $1.memoryCost }
    }

    /// Removes what a successful unsafe request made stale (RFC 9111 §4.4).
    func invalidate(after response: HTTPResponseHead, to request: URLRequest) {
        guard (200..<400).contains(response.statusCode), let url = request.url else { return }
        remove(for: url)
        for header in ["Location", "Content-Location"] {
            // Only URLs of the request's origin (§4.4): `HTTP://Example.com:80/x` is `http://example.com/x`'s.
            guard let value = response.value(forHTTPHeaderField: header), let target = URL(string: value, relativeTo: url)?.absoluteURL,
                Origin.same(target, url)
            else { continue }
            remove(for: target)
        }
    }

    /// The entry built from a network response, for storage.
    func entry(for request: URLRequest, response: HTTPResponseHead, body: Data, requestDate: Date) -> CachedResponse? {
        guard let url = request.url else { return nil }
        var headers = response.headers
        for name in Self.unstoredFieldNames(of: response) { headers[name] = nil }
        // The body is stored decoded; the stored framing must describe it. A coding the
        // transport could not decode arrived as it was sent, and the field says so.
        if ContentCodings.areDecodable(headers["Content-Encoding"] ?? "") { headers["Content-Encoding"] = nil }
        headers["Content-Length"] = String(body.count)
        var vary: [String: String] = [:]
        for name in CachedResponse.varyNames(response.value(forHTTPHeaderField: "Vary")) {
            if let value = request.value(forHTTPHeaderField: name) { vary[name.lowercased()] = value }
        }
        let entry = CachedResponse(
            url: url, method: request.httpMethod ?? "GET", statusCode: response.statusCode, headers: headers,
            data: (request.httpMethod ?? "GET").uppercased() == "HEAD" ? Data() : body,
            varyingRequestHeaders: vary, requestDate: requestDate, responseDate: Date())
        // A part is kept only when its body is exactly the range it announces.
        if entry.statusCode == 206, entry.storedPart == nil { return nil }
        return entry
    }

    /// Stores `entry`, unless it is a part (206) and a complete response is stored for its
    /// request: a part never replaces the whole.
    func storeUnlessPartOfStored(_ entry: CachedResponse, for request: URLRequest) {
        if entry.statusCode == 206 {
            var whole = request
            whole.setHeader(nil, for: "Range")
            if let stored = cachedResponse(for: whole), stored.statusCode != 206 { return }
        }
        store(entry)
    }
}

extension CachedResponse {
    static func varyNames(_ header: String?) -> [String] {
        (header ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The header names of `Vary`, lower-cased.
    var varyNameSet: Set<String> { Set(Self.varyNames(headers["Vary"]).map { $0.lowercased() }) }

    /// Whether `request` sends the same values for the headers the response's `Vary` names,
    /// compared as their syntax allows (see ``normalizedVaryValue(_:name:)``).
    func matchesVary(of request: URLRequest) -> Bool {
        let names = Self.varyNames(headers["Vary"])
        if names.contains("*") { return false }
        return names.allSatisfy { name in
            let sent = request.value(forHTTPHeaderField: name)
            let stored = varyingRequestHeaders[name.lowercased()]
            guard let sent, let stored else { return sent == nil && stored == nil }
            return Self.normalizedVaryValue(sent, name: name) == Self.normalizedVaryValue(stored, name: name)
        }
    }

    /// A request field's value as `Vary` compares it (RFC 9111 §4.1: "normalizing both header
    /// field values in a way that is known to have identical semantics"): whitespace around
    /// list members and inside them collapsed, and for the content-negotiation lists — whose
    /// members are case-insensitive tokens and whose order carries no meaning beside their
    /// `q` weights — lower-cased and sorted.
    static func normalizedVaryValue(_ value: String, name: String) -> String {
        let members = value.split(separator: ",").map { member in
            member.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
                .replacingOccurrences(of: " ;", with: ";").replacingOccurrences(of: "; ", with: ";")
        }.filter { !$0.isEmpty }
        let field = name.lowercased()
        guard caseInsensitiveListFields.contains(field) else { return members.joined(separator: ",") }
        let lowered = members.map { $0.lowercased() }
        guard weightedListFields.contains(field) else { return lowered.sorted().joined(separator: ",") }
        return lowered.map(normalizedWeightedMember).sorted().joined(separator: ",")
    }

    /// A lower-cased member of a weighted list (`fr;q=0.50`) with its weight in one spelling:
    /// `q` in thousandths (RFC 9110 §12.4.2), left out when it is the default 1 — so `en`,
    /// `en;q=1.0` and `en;q=1` are one member, and `fr;q=.5`, `fr;q=0.5`, `fr;q=0.500` another.
    /// A weight that is not a number stays as written.
    static func normalizedWeightedMember(_ member: String) -> String {
        var parts = member.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        guard let index = parts.indices.dropFirst().first(where: { parts[$0].hasPrefix("q=") }) else { return member }
        let text = parts[index].dropFirst(2)
        guard let weight = Double(text), weight >= 0, weight <= 1, !text.contains(where: { $0 != "." && !$0.isNumber }) else {
            return member
        }
        let thousandths = Int((weight * 1000).rounded())
        if thousandths == 1000 { parts.remove(at: index) } else { parts[index] = "q=\(thousandths)" }
        return parts.joined(separator: ";")
    }

    /// Request fields whose values are lists of case-insensitive tokens.
    static let caseInsensitiveListFields: Set<String> = ["accept", "accept-language", "accept-encoding", "accept-charset"]

    /// Of those, the lists whose members carry nothing but a `q` weight: their weights are
    /// compared as numbers (``normalizedWeightedMember(_:)``). `Accept` keeps its members as
    /// written — media type parameters before `q` are part of the type.
    static let weightedListFields: Set<String> = ["accept-language", "accept-encoding", "accept-charset"]
}

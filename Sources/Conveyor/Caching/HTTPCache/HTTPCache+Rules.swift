import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What may be stored, and what a stored response may answer (RFC 9111 §3, §4, §5.2; RFC 5861).
extension HTTPCache {
    /// Whether `response` to `request` may be stored (see the type's documentation).
    /// `authenticated` says the transport answered a challenge with a credential for it: the
    /// request as sent carried `Authorization`, though the one the cache saw did not.
    func canStore(_ response: HTTPResponseHead, for request: URLRequest, authenticated: Bool = false) -> Bool {
        let method = (request.httpMethod ?? "GET").uppercased()
        let status = response.statusCode
        // Final responses only; a 304 is not a response to store as is. A partial (206) is kept
        // only as one byte range of a known length, with explicit freshness (§3.3), to answer
        // Range requests inside it.
        guard method == "GET" || method == "HEAD", (200...999).contains(status), status != 304 else { return false }
        // A response to a Range request other than the whole (200) or a part (206) — a 416 above
        // all — speaks of the range asked for, not of the resource: stored under the URL it would
        // answer a later whole GET, or replace a stored complete response (RFC 9110 §15.5.17).
        if request.value(forHTTPHeaderField: "Range") != nil, status != 200, status != 206 { return false }
        if status == 206 {
            guard method == "GET", let range = HTTPGrammar.contentRange(response.value(forHTTPHeaderField: "Content-Range")),
                range.total != nil
            else { return false }
        }
        let requestControl = CacheControl(request.value(forHTTPHeaderField: "Cache-Control"))
        let responseControl = CacheControl(response.value(forHTTPHeaderField: "Cache-Control"))
        if requestControl.contains("no-store") { return false }
        if responseControl.contains("must-understand") {
            // §5.2.2.3: understood, it overrides `no-store`; not understood, nothing is stored.
            guard Self.understoodStatusCodes.contains(status) else { return false }
        } else if responseControl.contains("no-store") {
            return false
        }
        if isShared && responseControl.containsUnqualified("private") { return false }
        if response.value(forHTTPHeaderField: "Vary")?.contains("*") == true { return false }
        // RFC 9111 §3.5: a response to an authenticated request is stored only when it says so.
        if authenticated || request.value(forHTTPHeaderField: "Authorization") != nil,
            !(responseControl.contains("public") || responseControl.contains("s-maxage") || responseControl.contains("must-revalidate"))
        {
            return false
        }
        let hasExplicitLifetime =
            responseControl.seconds("max-age") != nil || (isShared && responseControl.seconds("s-maxage") != nil)
            || response.value(forHTTPHeaderField: "Expires") != nil
        if status == 206 || !Self.allowsHeuristicFreshness(statusCode: status, control: responseControl) {
            // §3: any final status is storable with explicit freshness; without it, only with
            // `public`, which allows a heuristic lifetime (§4.2.2).
            return hasExplicitLifetime
        }
        let hasValidator = response.value(forHTTPHeaderField: "ETag") != nil || response.value(forHTTPHeaderField: "Last-Modified") != nil
        return hasExplicitLifetime || responseControl.contains("s-maxage") || hasValidator
    }

    /// Whether a response to a `POST` may be stored as the answer to a later `GET` of its URL
    /// (RFC 9111 §4, RFC 9110 §9.3.3): a 2xx with explicit freshness (`max-age`, `Expires`;
    /// `s-maxage` in a shared cache) whose `Content-Location` names the request's own URL, and
    /// that the rules of ``canStore(_:for:authenticated:)`` allow for a `GET` with the same fields.
    func canStoreAsGET(_ response: HTTPResponseHead, toPOST request: URLRequest, authenticated: Bool) -> Bool {
        guard (request.httpMethod ?? "GET").uppercased() == "POST", (200...299).contains(response.statusCode), let url = request.url,
            let location = response.value(forHTTPHeaderField: "Content-Location"),
            let target = URL(string: location, relativeTo: url)?.absoluteURL,
            Origin.canonicalString(of: target) == Origin.canonicalString(of: url)
        else { return false }
        let control = CacheControl(response.value(forHTTPHeaderField: "Cache-Control"))
        let explicit =
            control.seconds("max-age") != nil || (isShared && control.seconds("s-maxage") != nil)
            || HTTPDate.parse(response.value(forHTTPHeaderField: "Expires")) != nil
        return explicit && canStore(response, for: Self.getRequest(for: request), authenticated: authenticated)
    }

    /// `request` as the `GET` of its URL, fields kept, body dropped.
    static func getRequest(for request: URLRequest) -> URLRequest {
        var get = request
        get.httpMethod = "GET"
        get.httpBody = nil
        return get
    }

    /// Header fields never stored with a response: `Set-Cookie` (a cookie set for one user must
    /// never reach another with a stored response), hop-by-hop fields (§3.1: `Connection`, the
    /// fields it names, `Keep-Alive`, `Proxy-Connection`, `TE`, `Transfer-Encoding`, `Upgrade`)
    /// and those a qualified `no-cache="…"` or `private="…"` names (§5.2.2.4, §5.2.2.7).
    static func unstoredFieldNames(of response: HTTPResponseHead) -> Set<String> {
        var names: Set<String> = ["set-cookie", "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade"]
        if let connection = response.value(forHTTPHeaderField: "Connection") {
            for name in connection.split(separator: ",") { names.insert(name.trimmingCharacters(in: .whitespaces).lowercased()) }
        }
        let control = CacheControl(response.value(forHTTPHeaderField: "Cache-Control"))
        names.formUnion(control.fieldNames("no-cache"))
        names.formUnion(control.fieldNames("private"))
        return names
    }

    /// Whether the entry is fresh enough to answer `request` without the network: the
    /// response's lifetime and the request's own `no-cache`, `max-age`, `min-fresh` and
    /// `max-stale` (§5.2.1). A fresh `immutable` response is not revalidated on a reload
    /// (`max-age=0`); an explicit `no-cache` still revalidates it.
    func canAnswer(_ request: URLRequest, with entry: CachedResponse, at now: Date = Date()) -> Bool {
        let control = Self.requestControl(of: request)
        if control.contains("no-cache") { return false }
        let responseControl = entry.cacheControl
        if responseControl.containsUnqualified("no-cache") { return false }
        let age = entry.currentAge(at: now)
        let lifetime = entry.freshnessLifetime(shared: isShared)
        let fresh = age < lifetime
        if fresh, responseControl.contains("immutable") { return true }
        if let maxAge = control.seconds("max-age"), age > maxAge { return false }
        if let minFresh = control.seconds("min-fresh"), lifetime - age < minFresh { return false }
        if fresh { return true }
        // Stale: only a request's `max-stale` takes it, and never against `must-revalidate`
        // (or `proxy-revalidate` / `s-maxage` in a shared cache).
        guard control.contains("max-stale"), !responseControl.contains("must-revalidate"),
            !(isShared && (responseControl.contains("proxy-revalidate") || responseControl.contains("s-maxage")))
        else { return false }
        guard let maxStale = control.seconds("max-stale") else { return control.containsUnqualified("max-stale") }
        return age - lifetime <= maxStale
    }

    /// Whether a stale entry may answer at once while one background revalidation updates it
    /// (`stale-while-revalidate`, RFC 5861 §3).
    func canAnswerWhileRevalidating(_ request: URLRequest, with entry: CachedResponse, at now: Date = Date()) -> Bool {
        let control = Self.requestControl(of: request)
        let responseControl = entry.cacheControl
        guard !control.contains("no-cache"), !control.contains("max-age"), !control.contains("min-fresh"),
            !responseControl.containsUnqualified("no-cache"), !responseControl.contains("must-revalidate"),
            let window = responseControl.seconds("stale-while-revalidate")
        else { return false }
        let staleness = entry.currentAge(at: now) - entry.freshnessLifetime(shared: isShared)
        return staleness >= 0 && staleness < window
    }

    /// Whether a stale entry may answer instead of a failure — a connection that failed or a
    /// 500, 502, 503 or 504 — by its `stale-if-error` (RFC 5861 §4), in the response or the request.
    func canAnswerAfterError(_ request: URLRequest, with entry: CachedResponse, at now: Date = Date()) -> Bool {
        let responseControl = entry.cacheControl
        if responseControl.contains("must-revalidate") || responseControl.containsUnqualified("no-cache") { return false }
        let window = [Self.requestControl(of: request).seconds("stale-if-error"), responseControl.seconds("stale-if-error")]
            .compactMap { $0 }.max()
        guard let window else { return false }
        let staleness = entry.currentAge(at: now) - entry.freshnessLifetime(shared: isShared)
        return staleness < window
    }

    /// What answers a request whose connection failed before any response byte, decided when
    /// it is sent — the one rule for a failed connection:
    /// - ``Policy/returnCacheDataWhenUnreachable``: any stored entry;
    /// - `stale-if-error` (RFC 5861 §4) that covers the entry: the entry;
    /// - else, with ``answersStaleWhenDisconnected`` (RFC 9111 §4.2.4): an entry whose response
    ///   forbids serving it stale (`must-revalidate`, `no-cache`; in a shared cache also
    ///   `proxy-revalidate`, `s-maxage`) gives a 504 (§5.2.2.2); a request that limits the age it
    ///   takes (`no-cache`, `max-age`, `min-fresh`) gets the transport's error; otherwise the entry.
    func answerWhenDisconnected(_ request: URLRequest, with entry: CachedResponse?, policy: Policy) -> DisconnectedAnswer {
        guard let entry else { return .transportError }
        if policy == .returnCacheDataWhenUnreachable { return .stored(entry) }
        guard policy == .useProtocolCachePolicy else { return .transportError }
        if canAnswerAfterError(request, with: entry) { return .stored(entry) }
        guard answersStaleWhenDisconnected else { return .transportError }
        let responseControl = entry.cacheControl
        if responseControl.contains("must-revalidate") || responseControl.containsUnqualified("no-cache")
            || (isShared && (responseControl.contains("proxy-revalidate") || responseControl.contains("s-maxage")))
        {
            return .gatewayTimeout
        }
        let requestControl = Self.requestControl(of: request)
        if requestControl.contains("no-cache") || requestControl.contains("max-age") || requestControl.contains("min-fresh") {
            return .transportError
        }
        return .stored(entry)
    }

    /// What ``answerWhenDisconnected(_:with:policy:)`` decided.
    enum DisconnectedAnswer {
        /// The stored response answers (``ResponseSource/staleOnError``).
        case stored(CachedResponse)
        /// A `504 Gateway Timeout` the cache makes: the stored response may not answer stale.
        case gatewayTimeout
        /// The transport's error reaches the caller.
        case transportError
    }

    /// The request's `Cache-Control`; without one, `Pragma: no-cache` counts as `no-cache`
    /// (§5.4: only then).
    static func requestControl(of request: URLRequest) -> CacheControl {
        if let field = request.value(forHTTPHeaderField: "Cache-Control") { return CacheControl(field) }
        let pragma = request.value(forHTTPHeaderField: "Pragma")?.lowercased() ?? ""
        return CacheControl(
            pragma.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "no-cache" } ? "no-cache" : nil)
    }

    /// Whether a response without explicit freshness may get a heuristic lifetime (RFC 9111
    /// §4.2.2): its status is heuristically cacheable (RFC 9110 §15.1), or `public` marks it
    /// explicitly cacheable — a 599 with `public` and `Last-Modified` is fresh for a while.
    static func allowsHeuristicFreshness(statusCode: Int, control: CacheControl) -> Bool {
        heuristicallyCacheableStatusCodes.contains(statusCode) || control.contains("public")
    }

    /// The status codes after which `stale-if-error` may answer instead.
    static let errorStatusCodes: Set<Int> = [500, 502, 503, 504]
}

import Foundation

/// The directives of a `Cache-Control` header (RFC 9111 §5.2), names lowercased.
struct CacheControl: Equatable {
    private(set) var directives: [String: String?] = [:]
    /// Directives written with whitespace around their `=` (`max-age =3600`), which the grammar
    /// (`token [ "=" ( token / quoted-string ) ]`) does not allow: present, their value unusable.
    private(set) var malformed: Set<String> = []

    init(_ header: String?) {
        guard let header else { return }
        // Commas inside a quoted value (`no-cache="Set-Cookie, X-Token"`) do not separate directives.
        for part in QuotedStringSplitter.split(Substring(header), at: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = pieces.first?.trimmingCharacters(in: .whitespaces).lowercased(), !name.isEmpty else { continue }
            let value = pieces.count > 1 ? QuotedStringSplitter.unquoted(pieces[1].trimmingCharacters(in: .whitespaces)) : nil
            // The first occurrence counts.
            guard directives[name] == nil else { continue }
            directives[name] = value
            if pieces.count > 1, pieces[0].last?.isWhitespace == true || pieces[1].first?.isWhitespace == true { malformed.insert(name) }
        }
    }

    func contains(_ name: String) -> Bool { directives[name] != nil }

    /// Whether the directive is present without field names: `no-cache` (revalidate every time),
    /// not `no-cache="Set-Cookie"` (store and reuse the response, without those fields).
    func containsUnqualified(_ name: String) -> Bool {
        guard let value = directives[name] else { return false }
        return value == nil || value!.trimmingCharacters(in: .whitespaces).isEmpty
    }

    /// The field names a qualified `no-cache="…"` or `private="…"` lists, lower-cased.
    func fieldNames(_ name: String) -> [String] {
        guard let value = directives[name] ?? nil else { return [] }
        return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    /// A delta-seconds directive's value; nil when absent or not a number (`3600.0`, `3600a`,
    /// whitespace around the `=`).
    func seconds(_ name: String) -> TimeInterval? {
        guard !malformed.contains(name), let value = directives[name] ?? nil else { return nil }
        return Seconds.parseDeltaSeconds(value)
    }
}

extension CachedResponse {
    /// The longest heuristic lifetime given to a response that only has `Last-Modified`.
    static let heuristicLifetimeCap: TimeInterval = 24 * 3600

    var cacheControl: CacheControl { CacheControl(headers["Cache-Control"]) }

    /// How long the response stays fresh after it was generated (RFC 9111 §4.2.1):
    /// `s-maxage` (shared caches), `max-age`, `Expires` − `Date`, else 10% of the time since
    /// `Last-Modified`, capped at a day (§4.2.2); 0 when there is nothing to go on. A `max-age`
    /// (or `s-maxage`) that is not delta-seconds — `3600.0`, `3600a`, `max-age =3600` — makes
    /// the response stale, as §4.2.1 encourages, rather than falling back to `Expires` or the
    /// heuristic.
    func freshnessLifetime(shared: Bool) -> TimeInterval {
        let control = cacheControl
        if shared, control.contains("s-maxage") { return control.seconds("s-maxage") ?? 0 }
        if control.contains("max-age") { return control.seconds("max-age") ?? 0 }
        if let expiresText = headers["Expires"] {
            // An invalid Expires (e.g. "0") means already expired (§5.3).
            guard let expires = HTTPDate.parse(expiresText) else { return 0 }
            return max(0, expires.timeIntervalSince(HTTPDate.parse(headers["Date"]) ?? responseDate))
        }
        // A heuristic lifetime only for the statuses RFC 9110 §15.1 lists as heuristically
        // cacheable, and for any status marked explicitly cacheable with `public` (§4.2.2).
        if HTTPCache.allowsHeuristicFreshness(statusCode: statusCode, control: control),
            let modified = HTTPDate.parse(headers["Last-Modified"])
        {
            let since = (HTTPDate.parse(headers["Date"]) ?? responseDate).timeIntervalSince(modified)
            return min(max(0, since * 0.1), Self.heuristicLifetimeCap)
        }
        return 0
    }

    /// The response's current age (RFC 9111 §4.2.3).
    func currentAge(at now: Date = Date()) -> TimeInterval {
        let dateValue = HTTPDate.parse(headers["Date"]) ?? responseDate
        // delta-seconds (§5.1): `7200.0` is invalid and ignored; of several values (`7200, 0`,
        // or two fields joined) the first counts; absurd ones saturate at 2^31.
        let firstAge = headers["Age"]?.split(separator: ",", omittingEmptySubsequences: false).first
        let ageValue = firstAge.flatMap { Seconds.parseDeltaSeconds($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        let apparentAge = max(0, responseDate.timeIntervalSince(dateValue))
        let responseDelay = max(0, responseDate.timeIntervalSince(requestDate))
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        return correctedInitialAge + max(0, now.timeIntervalSince(responseDate))
    }

    /// Whether the entry may answer a request without asking the server.
    func isFresh(shared: Bool, at now: Date = Date()) -> Bool {
        !cacheControl.containsUnqualified("no-cache") && currentAge(at: now) < freshnessLifetime(shared: shared)
    }

    /// The validators a conditional request can send (§4.3.1).
    var conditionalHeaders: [String: String] {
        var fields: [String: String] = [:]
        if let etag = headers["ETag"] { fields["If-None-Match"] = etag }
        if let modified = headers["Last-Modified"] { fields["If-Modified-Since"] = modified }
        return fields
    }

    /// The entry after a `304 Not Modified`: its headers replaced by the 304's (§4.3.4),
    /// its times those of the revalidation.
    func refreshed(with notModified: HTTPResponseHead, requestDate: Date, responseDate: Date) -> CachedResponse {
        var copy = self
        let unstored = HTTPCache.unstoredFieldNames(of: notModified)
        for (name, value) in notModified.headers {
            let lowered = name.lowercased()
            if unstored.contains(lowered) { continue }
            // The stored body's framing stays the stored body's.
            if lowered == "content-length" || lowered == "content-encoding" { continue }
            copy.headers[name] = value
        }
        copy.requestDate = requestDate
        copy.responseDate = responseDate
        return copy
    }
}

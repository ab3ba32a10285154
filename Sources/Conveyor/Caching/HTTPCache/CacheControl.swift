import Foundation

/// The directives of a `Cache-Control` header (RFC 9111 §5.2), names lowercased.
struct CacheControl: Equatable {
    private(set) var directives: [String: String?] = [:]

    init(_ header: String?) {
        guard let header else { return }
        for part in header.split(separator: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1)
            guard let name = pieces.first?.trimmingCharacters(in: .whitespaces).lowercased(), !name.isEmpty else { continue }
            let value =
                pieces.count > 1
                ? pieces[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil
            directives[name] = value
        }
    }

    func contains(_ name: String) -> Bool { directives[name] != nil }

    /// A delta-seconds directive's value; nil when absent or not a number.
    func seconds(_ name: String) -> TimeInterval? {
        guard let value = directives[name] ?? nil else { return nil }
        return Seconds.parseDeltaSeconds(value)
    }
}

/// HTTP dates (RFC 9110 §5.6.7). Parses the IMF-fixdate form every current server sends
/// (`Sun, 06 Nov 1994 08:49:37 GMT`) by hand: it runs several times per cache lookup, and a
/// `DateFormatter` per call (they are not safe to share across threads) costs far more.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    static func parse(_ text: String?) -> Date? {
        guard let text else { return nil }
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 6, parts[5].uppercased() == "GMT",
            let day = Int(parts[1]), (1...31).contains(day),
            let month = months.firstIndex(of: parts[2].lowercased()),
            let year = Int(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int($0) }
        guard time.count == 3, (0...23).contains(time[0]), (0...59).contains(time[1]), (0...60).contains(time[2]) else { return nil }
        let days = daysSinceEpoch(year: year, month: month + 1, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2]))
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension CachedResponse {
    /// The longest heuristic lifetime given to a response that only has `Last-Modified`.
    static let heuristicLifetimeCap: TimeInterval = 24 * 3600

    var cacheControl: CacheControl { CacheControl(headers["Cache-Control"]) }

    /// How long the response stays fresh after it was generated (RFC 9111 §4.2.1):
    /// `s-maxage` (shared caches), `max-age`, `Expires` − `Date`, else 10% of the time since
    /// `Last-Modified`, capped at a day (§4.2.2); 0 when there is nothing to go on.
    func freshnessLifetime(shared: Bool) -> TimeInterval {
        let control = cacheControl
        if shared, let value = control.seconds("s-maxage") { return value }
        if let value = control.seconds("max-age") { return value }
        if let expiresText = headers["Expires"] {
            // An invalid Expires (e.g. "0") means already expired (§5.3).
            guard let expires = HTTPDate.parse(expiresText) else { return 0 }
            return max(0, expires.timeIntervalSince(HTTPDate.parse(headers["Date"]) ?? responseDate))
        }
        if let modified = HTTPDate.parse(headers["Last-Modified"]) {
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
        !cacheControl.contains("no-cache") && currentAge(at: now) < freshnessLifetime(shared: shared)
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
        for (name, value) in notModified.headers {
            let lowered = name.lowercased()
            // The stored body's framing stays the stored body's.
            if lowered == "content-length" || lowered == "content-encoding" || lowered == "transfer-encoding" { continue }
            // Never stored: a cookie set for one user must not reach another.
            if lowered == "set-cookie" { continue }
            copy.headers[name] = value
        }
        copy.requestDate = requestDate
        copy.responseDate = responseDate
        return copy
    }
}

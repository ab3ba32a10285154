import Foundation

/// The directives of a `Cache-Control` header (RFC 9111 §5.2), names lowercased.
struct CacheControl: Equatable {
    private(set) var directives: [String: String?] = [:]

    init(_ header: String?) {
        guard let header else { return }
        // Commas inside a quoted value (`no-cache="Set-Cookie, X-Token"`) do not separate directives.
        for part in QuotedStringSplitter.split(Substring(header), at: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1)
            guard let name = pieces.first?.trimmingCharacters(in: .whitespaces).lowercased(), !name.isEmpty else { continue }
            let value = pieces.count > 1 ? QuotedStringSplitter.unquoted(pieces[1].trimmingCharacters(in: .whitespaces)) : nil
            // The first occurrence counts.
            if directives[name] == nil { directives[name] = value }
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

    /// A delta-seconds directive's value; nil when absent or not a number.
    func seconds(_ name: String) -> TimeInterval? {
        guard let value = directives[name] ?? nil else { return nil }
        return Seconds.parseDeltaSeconds(value)
    }
}

/// HTTP dates (RFC 9110 §5.6.7), parsed by hand: they are read several times per cache lookup,
/// and a `DateFormatter` per call (they are not safe to share across threads) costs far more.
///
/// Exactly the three forms the RFC defines are dates, each character where the grammar puts it:
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more than 50 years ahead is in the past
/// century) and asctime (`Sun Nov  6 08:49:37 1994`). Anything else — no comma, a doubled space,
/// a one-digit hour — is not a date (and an invalid `Expires` means "already expired", §5.3).
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays: Set<String> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays: Set<String> = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    static func parse(_ text: String?) -> Date? {
        guard let text else { return nil }
        let bytes = Array(text.utf8)
        return imfFixdate(bytes) ?? rfc850(bytes) ?? asctime(bytes)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ b: [UInt8]) -> Date? {
        guard b.count == 29, shortDays.contains(text(b[0..<3])), b[3] == comma, b[4] == space, b[7] == space, b[11] == space,
            b[16] == space, b[25] == space, text(b[26..<29]) == "gmt",
            let day = number(b[5..<7]), let month = month(b[8..<11]), let year = number(b[12..<16])
        else { return nil }
        return date(year: year, month: month, day: day, time: b[17..<25])
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    private static func rfc850(_ b: [UInt8]) -> Date? {
        guard let comma = b.firstIndex(of: comma), longDays.contains(text(b[0..<comma])), b.count == comma + 24,
            b[comma + 1] == space, b[comma + 4] == dash, b[comma + 8] == dash, b[comma + 11] == space, b[comma + 20] == space,
            text(b[(comma + 21)...]) == "gmt",
            let day = number(b[(comma + 2)..<(comma + 4)]), let month = month(b[(comma + 5)..<(comma + 8)]),
            let twoDigitYear = number(b[(comma + 9)..<(comma + 11)])
        else { return nil }
        // RFC 9110 §5.6.7: a year more than 50 years in the future is the most recent past one.
        let currentYear = Calendar(identifier: .gregorian).component(.year, from: Date())
        var year = currentYear - currentYear % 100 + twoDigitYear
        if year > currentYear + 50 { year -= 100 }
        return date(year: year, month: month, day: day, time: b[(comma + 12)..<(comma + 20)])
    }

    /// `Sun Nov  6 08:49:37 1994`
    private static func asctime(_ b: [UInt8]) -> Date? {
        guard b.count == 24, shortDays.contains(text(b[0..<3])), b[3] == space, b[7] == space, b[10] == space, b[19] == space,
            let month = month(b[4..<7]), let year = number(b[20..<24])
        else { return nil }
        // The day is two digits or a space and one digit.
        let day: Int?
        if b[8] == space { day = number(b[9..<10]) } else { day = number(b[8..<10]) }
        guard let day else { return nil }
        return date(year: year, month: month, day: day, time: b[11..<19])
    }

    private static let space = UInt8(ascii: " ")
    private static let comma = UInt8(ascii: ",")
    private static let dash = UInt8(ascii: "-")

    private static func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self).lowercased() }

    private static func month(_ bytes: ArraySlice<UInt8>) -> Int? { months.firstIndex(of: text(bytes)).map { $0 + 1 } }

    /// Digits only, as many as given.
    private static func number(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// `HH:MM:SS` with two digits each.
    private static func date(year: Int, month: Int, day: Int, time: ArraySlice<UInt8>) -> Date? {
        let t = Array(time)
        guard t.count == 8, t[2] == UInt8(ascii: ":"), t[5] == UInt8(ascii: ":"),
            let hour = number(t[0..<2]), let minute = number(t[3..<5]), let second = number(t[6..<8]),
            (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
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
        // A heuristic lifetime only for the statuses RFC 9110 §15.1 lists as heuristically cacheable.
        if HTTPCache.heuristicallyCacheableStatusCodes.contains(statusCode), let modified = HTTPDate.parse(headers["Last-Modified"]) {
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

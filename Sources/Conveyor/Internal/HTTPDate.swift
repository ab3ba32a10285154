import Foundation

/// The one reader of HTTP dates (RFC 9110 §5.6.7): the cache's `Date`, `Expires` and
/// `Last-Modified`, `Retry-After`, and cookies' `Expires` (after their own normalising) all ask it.
///
/// Parsed by hand: dates are read several times per cache lookup, and a `DateFormatter` per call
/// (they are not safe to share across threads) costs far more.
///
/// Exactly the three forms the RFC defines are dates, each character where the grammar puts it:
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year that would put the date more than 50
/// years in the future is in the past century) and asctime (`Sun Nov  6 08:49:37 1994`).
/// Anything else — no comma, a doubled space, a one-digit hour, 31 February — is not a date
/// (and an invalid `Expires` means "already expired", RFC 9111 §5.3).
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays: Set<String> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays: Set<String> = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// The date `text` names in one of the three forms; nil for nil or anything else.
    /// - Parameters:
    ///   - text: A field value, as received (no trimming is done).
    ///   - now: The present, against which an RFC 850 two-digit year is read.
    static func parse(_ text: String?, now: Date = Date()) -> Date? {
        guard let text else { return nil }
        let bytes = Array(text.utf8)
        return imfFixdate(bytes) ?? rfc850(bytes, now: now) ?? asctime(bytes)
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
    private static func rfc850(_ b: [UInt8], now: Date) -> Date? {
        guard let comma = b.firstIndex(of: comma), longDays.contains(text(b[0..<comma])), b.count == comma + 24,
            b[comma + 1] == space, b[comma + 4] == dash, b[comma + 8] == dash, b[comma + 11] == space, b[comma + 20] == space,
            text(b[(comma + 21)...]) == "gmt",
            let day = number(b[(comma + 2)..<(comma + 4)]), let month = month(b[(comma + 5)..<(comma + 8)]),
            let twoDigitYear = number(b[(comma + 9)..<(comma + 11)])
        else { return nil }
        // RFC 9110 §5.6.7: a timestamp that appears to be more than 50 years in the future is
        // in the most recent past year with the same last two digits.
        let currentYear = Calendar(identifier: .gregorian).dateComponents(in: gmt, from: now).year ?? 1970
        let time = b[(comma + 12)..<(comma + 20)]
        guard let candidate = date(year: currentYear - currentYear % 100 + twoDigitYear, month: month, day: day, time: time) else {
            return nil
        }
        guard candidate.timeIntervalSince(now) > fiftyYears else { return candidate }
        return date(year: currentYear - currentYear % 100 + twoDigitYear - 100, month: month, day: day, time: time)
    }

    private static let gmt = TimeZone(secondsFromGMT: 0) ?? .current

    /// 50 Gregorian years in seconds (365.2425 days each).
    private static let fiftyYears: TimeInterval = 50 * 365.2425 * 86_400

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

    /// Digits only, as many as given (at most four here).
    private static func number(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard HTTPGrammar.isDigits(bytes) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// `HH:MM:SS` with two digits each, on a day that exists in that month.
    private static func date(year: Int, month: Int, day: Int, time: ArraySlice<UInt8>) -> Date? {
        let t = Array(time)
        guard t.count == 8, t[2] == UInt8(ascii: ":"), t[5] == UInt8(ascii: ":"),
            let hour = number(t[0..<2]), let minute = number(t[3..<5]), let second = number(t[6..<8]),
            (1...days(inMonth: month, of: year)).contains(day), (0...23).contains(hour), (0...59).contains(minute),
            (0...60).contains(second)
        else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// The length of `month` (1…12) in the proleptic Gregorian calendar.
    private static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
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

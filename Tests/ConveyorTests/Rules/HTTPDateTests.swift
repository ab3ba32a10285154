import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one HTTP-date reader (`HTTPDate`, RFC 9110 §5.6.7), and `Retry-After`, which reads its
/// dates through it.
@Suite("HTTP dates: the three forms, two-digit years and garbage")
struct HTTPDateTests {
    /// 1994-11-06 08:49:37 GMT, the RFC's example.
    static let example = Date(timeIntervalSince1970: 784_111_777)

    /// Midnight GMT at the start of `day`.
    static func date(_ year: Int, _ month: Int, _ day: Int) -> Date {
        Date(timeIntervalSince1970: TimeInterval(HTTPDate.daysSinceEpoch(year: year, month: month, day: day) * 86_400))
    }

    @Test("IMF-fixdate, RFC 850 and asctime name the same instant; names are case-insensitive")
    func threeForms() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Self.example)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: Self.date(2026, 1, 1)) == Self.example)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == Self.example)
        #expect(HTTPDate.parse("Sun Nov 16 08:49:37 1994") == Self.example.addingTimeInterval(10 * 86_400))
        #expect(HTTPDate.parse("sun, 06 NOV 1994 08:49:37 gmt") == Self.example)
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 00:00:00 GMT") == Self.date(2000, 2, 29))
        #expect(HTTPDate.parse("Thu, 31 Dec 2099 23:59:60 GMT") == Self.date(2100, 1, 1))  // a leap second
    }

    @Test("RFC 850 two-digit years: more than 50 years ahead of now is the previous century")
    func twoDigitYears() {
        let now = Self.date(2026, 6, 1)
        // 2076-01-01 is 49.6 years ahead: kept.
        #expect(HTTPDate.parse("Wednesday, 01-Jan-76 00:00:00 GMT", now: now) == Self.date(2076, 1, 1))
        // 2076-12-01 is 50.5 years ahead: 1976. A comparison of years alone (2076 ≤ 2026 + 50) kept 2076.
        #expect(HTTPDate.parse("Wednesday, 01-Dec-76 00:00:00 GMT", now: now) == Self.date(1976, 12, 1))
        #expect(HTTPDate.parse("Thursday, 01-Jan-99 00:00:00 GMT", now: now) == Self.date(1999, 1, 1))
        #expect(HTTPDate.parse("Friday, 01-Jan-27 00:00:00 GMT", now: now) == Self.date(2027, 1, 1))
        #expect(HTTPDate.parse("Monday, 01-Jan-00 00:00:00 GMT", now: now) == Self.date(2000, 1, 1))
        // The RFC only ever reads such a year back, never forward: in 2090, "05" is 2005.
        #expect(HTTPDate.parse("Monday, 01-Jan-05 00:00:00 GMT", now: Self.date(2090, 1, 1)) == Self.date(2005, 1, 1))
    }

    @Test(
        "Anything but the three forms is not a date",
        arguments: [
            "", " ", "0", "-1", "1994-11-06T08:49:37Z", "784111777",
            "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000", "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT", "Sun,  06 Nov 1994 08:49:37 GMT", "Sun 06 Nov 1994 08:49:37 GMT",
            " Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT ", "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 19a4 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 30 Feb 1994 08:49:37 GMT",
            "Thu, 29 Feb 1900 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 06 Nov 1994 08-49-37 GMT", "Sün, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT", "Sunday, 06 Nov 94 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT",
            "Sunday, 31-Apr-94 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 UTC",
            "Sun Nov 6 08:49:37 1994", "Sun Nov 06 08:49:37 94", "Sun Nov  6 08:49:37 1994 GMT", "Sun Nov 31 08:49:37 1994",
        ])
    func garbage(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    /// A 503 whose `Retry-After` is `value`.
    static func retryAfter(_ value: String) throws -> TimeInterval? {
        let response = try #require(
            HTTPURLResponse(url: URL(string: "http://x")!, statusCode: 503, httpVersion: nil, headerFields: ["Retry-After": value]))
        return RetryPolicy.retryAfter(response)
    }

    @Test("Retry-After reads all three date forms, delta-seconds, and nothing else")
    func retryAfter() throws {
        // 2060 is less than 50 years ahead: the RFC 850 form reads it in this century.
        for value in ["Fri, 01 Jan 2060 00:00:00 GMT", "Thursday, 01-Jan-60 00:00:00 GMT", "Thu Jan  1 00:00:00 2060"] {
            let seconds = try #require(try Self.retryAfter(value), "\(value)")
            // The two "now"s are microseconds apart when quiet; 60 s of the 34 years only
            // allows a loaded machine to stall this thread between them.
            #expect(abs(seconds - Self.date(2060, 1, 1).timeIntervalSinceNow) < 60, "\(value)")
        }
        #expect(try Self.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT") == 0)  // past: now
        #expect(try Self.retryAfter(" 120 ") == 120)
        for value in ["soon", "Fri, 31 Feb 2060 00:00:00 GMT", "Fri, 1 Jan 2060 00:00:00 GMT", "1e3", "-5", "2060-01-01"] {
            #expect(try Self.retryAfter(value) == nil, "\(value)")
        }
    }
}

import Dispatch
import Foundation

/// The one conversion from seconds — a caller's `TimeInterval`, or a number a server sent — to
/// what timers, `Task.sleep` and dispatch take. It saturates instead of trapping:
/// `UInt64(1e20)`, `UInt64(.infinity)` and `Int(.nan)` all stop the process, and a server's
/// `retry: 99999999999999999999` or a caller's `.infinity` reached them before.
///
/// Every wait Conveyor arms goes through here; nothing else multiplies seconds by 1e9.
enum Seconds {
    /// The longest wait Conveyor arms: 10⁹ s, about 31.7 years — "never" for any program, and
    /// 10¹⁸ ns, well inside `UInt64` (1.8 × 10¹⁹) and `DispatchTime`'s range.
    static let maximum: TimeInterval = 1_000_000_000

    /// `seconds` within `range`: NaN becomes the lower bound, ±infinity the nearer bound.
    /// - Parameters:
    ///   - seconds: Any value, trusted or not.
    ///   - range: The bounds; default `0...maximum`.
    static func clamped(_ seconds: TimeInterval, to range: ClosedRange<TimeInterval> = 0...maximum) -> TimeInterval {
        guard !seconds.isNaN else { return range.lowerBound }
        return Swift.min(Swift.max(seconds, range.lowerBound), range.upperBound)
    }

    /// `seconds` as nanoseconds, clamped to `0...maximum` first.
    static func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
        UInt64(clamped(seconds) * 1e9)
    }

    /// `seconds` as whole seconds for a header field (`Age`), clamped to `0...maximum` first.
    static func wholeSeconds(_ seconds: TimeInterval) -> Int {
        Int(clamped(seconds))
    }

    /// The dispatch time `seconds` from now.
    static func dispatchTime(after seconds: TimeInterval) -> DispatchTime {
        DispatchTime(uptimeNanoseconds: DispatchTime.now().uptimeNanoseconds &+ nanoseconds(seconds))
    }

    /// `seconds` as a dispatch interval (for repeating timers).
    static func dispatchInterval(_ seconds: TimeInterval) -> DispatchTimeInterval {
        .nanoseconds(Int(nanoseconds(seconds)))
    }

    /// Sleeps for `seconds`; throws `CancellationError` when the Task is cancelled.
    static func sleep(_ seconds: TimeInterval) async throws {
        try await Task.sleep(nanoseconds: nanoseconds(seconds))
    }

    /// RFC 9111 §1.2.2 delta-seconds: digits only (no sign, no fraction, no exponent), and a
    /// value too large to represent is the greatest one, 2³¹. Nil for anything else.
    static func parseDeltaSeconds<Text: StringProtocol>(_ text: Text) -> TimeInterval? {
        guard HTTPGrammar.isDigits(text) else { return nil }
        // Ten digits already pass 2^31; longer strings need not be read.
        guard text.utf8.count <= 10, let value = Int(text) else { return deltaSecondsCap }
        return TimeInterval(Swift.min(value, Int(deltaSecondsCap)))
    }

    /// The largest delta-seconds value a cache uses (RFC 9111 §1.2.2): 2³¹.
    static let deltaSecondsCap: TimeInterval = 2_147_483_648
}

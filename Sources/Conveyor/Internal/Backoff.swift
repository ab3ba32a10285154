import Foundation

/// The one backoff of Conveyor: a retry (``RetryPolicy``), an outbox delivery or finish, and a
/// Server-Sent Events reconnection all wait `base × 2^doublings`, capped, times a random factor
/// in ``jitter`` so that clients failing together do not come back together, never below a floor.
///
/// Every number goes through ``Seconds/clamped(_:to:)`` first: a caller's `.infinity` or NaN, a
/// negative base and a huge attempt count give a wait within `0…`10⁹ s, never a trap or a NaN.
enum Backoff {
    /// The random factor each wait is scaled by.
    static let jitter: ClosedRange<Double> = 0.5...1

    /// The largest exponent used: 2¹⁰²³ is the largest finite power of two, so the growth is
    /// never infinite, and 0 × it is 0, not NaN. Any positive base has passed any cap by then.
    static let maximumDoublings = 1023

    /// The wait before the next attempt.
    /// - Parameters:
    ///   - base: The first wait, in seconds (clamped to `0…`10⁹).
    ///   - doublings: How many times it doubles (0 for the first wait; negative counts as 0).
    ///   - cap: The longest wait before jitter (clamped to `0…`10⁹).
    ///   - floor: The shortest wait after jitter (clamped to `0…cap`); default 0.
    ///   - factor: The jitter factor, clamped to ``jitter``; default a random one.
    /// - Returns: `max(floor, min(cap, base × 2^doublings) × factor)`, in `0…`10⁹ s.
    static func delay(
        base: TimeInterval, doublings: Int, cap: TimeInterval, floor: TimeInterval = 0,
        factor: Double = Double.random(in: Backoff.jitter)
    ) -> TimeInterval {
        let cap = Seconds.clamped(cap)
        let floor = Seconds.clamped(floor, to: 0...cap)
        let exponent = Double(Swift.min(Swift.max(0, doublings), maximumDoublings))
        let grown = Seconds.clamped(base) * pow(2, exponent)
        return Swift.max(floor, Swift.min(cap, grown) * Seconds.clamped(factor, to: jitter))
    }
}

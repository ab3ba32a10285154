import Foundation
import Testing

@testable import Conveyor

/// The one backoff (`Backoff`), and the three callers that use it: `RetryPolicy`, the outbox and
/// Server-Sent Events reconnection.
@Suite("Backoff: doubling, cap, floor, jitter and saturation")
struct BackoffTests {
    @Test("base × 2^doublings × factor, capped before the jitter, never below the floor")
    func numbers() {
        #expect(Backoff.delay(base: 0.5, doublings: 0, cap: 30, factor: 1) == 0.5)
        #expect(Backoff.delay(base: 0.5, doublings: 0, cap: 30, factor: 0.5) == 0.25)
        #expect(Backoff.delay(base: 0.5, doublings: 3, cap: 30, factor: 1) == 4)
        #expect(Backoff.delay(base: 0.5, doublings: 6, cap: 30, factor: 1) == 30)  // 32 capped
        #expect(Backoff.delay(base: 0.5, doublings: 6, cap: 30, factor: 0.5) == 15)
        #expect(Backoff.delay(base: 1, doublings: -3, cap: 30, factor: 1) == 1)  // negative: no doubling
        #expect(Backoff.delay(base: 1, doublings: 0, cap: 30, floor: 2, factor: 0.5) == 2)
        #expect(Backoff.delay(base: 1, doublings: 0, cap: 3, floor: 5, factor: 1) == 3)  // the floor stays under the cap
    }

    @Test("Huge attempt counts and infinite or NaN settings saturate: no trap, no NaN, no infinity")
    func saturation() {
        #expect(Backoff.delay(base: 0.5, doublings: .max, cap: 30, factor: 1) == 30)
        #expect(Backoff.delay(base: 0.5, doublings: 1_000_000, cap: 30, factor: 0.5) == 15)
        #expect(Backoff.delay(base: 1e-300, doublings: .max, cap: 30, factor: 1) == 30)
        #expect(Backoff.delay(base: 0, doublings: .max, cap: 30, factor: 1) == 0)
        #expect(Backoff.delay(base: .infinity, doublings: .max, cap: .infinity, factor: 1) == Seconds.maximum)
        #expect(Backoff.delay(base: .nan, doublings: 5, cap: 30, factor: 1) == 0)
        #expect(Backoff.delay(base: 1, doublings: 5, cap: .nan, factor: 1) == 0)
        #expect(Backoff.delay(base: -5, doublings: 5, cap: 30, factor: 1) == 0)
        #expect(Backoff.delay(base: 1, doublings: 0, cap: 30, floor: .infinity, factor: 1) == 30)
        #expect(Backoff.delay(base: 1, doublings: 0, cap: 30, factor: .nan) == 0.5)  // clamped to the jitter range
        #expect(Backoff.delay(base: 1, doublings: 0, cap: 30, factor: 7) == 1)
    }

    @Test("The random factor stays within 0.5…1 and spreads over it")
    func jitterRange() {
        let delays = (0..<2_000).map { _ in Backoff.delay(base: 8, doublings: 0, cap: 30) }
        #expect(delays.allSatisfy { (4...8).contains($0) })
        // 2,000 uniform draws: both quarters of the range are hit (the chance of missing one is 2^-2000).
        #expect(delays.contains { $0 < 5 } && delays.contains { $0 > 7 })
    }

    @Test("RetryPolicy: baseDelay × 2^(attempt−1) up to maximumDelay, times 0.5…1, bounded at any attempt")
    func retryPolicy() {
        let policy = RetryPolicy(maximumAttempts: 5, baseDelay: 0.5, maximumDelay: 30)
        for attempt in [1, 2, 4, 7, 100, Int.max] {
            let expected = min(30, 0.5 * pow(2, Double(min(attempt - 1, 1023))))
            let delay = policy.backoff(afterAttempt: attempt)
            #expect(delay >= expected * 0.5 && delay <= expected, "attempt \(attempt): \(delay)")
        }
        #expect((0.25...0.5).contains(policy.backoff(afterAttempt: 0)))
        // An unbounded policy still gives a wait a timer can arm (it was `.infinity`).
        let unbounded = RetryPolicy(maximumAttempts: 5, baseDelay: 1, maximumDelay: .infinity)
        let longest = unbounded.backoff(afterAttempt: .max)
        #expect(longest.isFinite && longest <= Seconds.maximum && longest >= Seconds.maximum / 2)
    }

    @Test("Server-Sent Events: the server's retry or the initial delay, doubled per failure in a row, within the bounds")
    func reconnection() {
        let policy = ServerSentEvents.Reconnection(initialDelay: 3, minimumDelay: 0.25, maximumDelay: 60)
        #expect(policy.delay(serverRetry: nil, failures: 0) == 3)  // no jitter after a good connection
        #expect(policy.delay(serverRetry: 0, failures: 0) == 0.25)
        #expect((3...6).contains(policy.delay(serverRetry: nil, failures: 1)))
        #expect((12...24).contains(policy.delay(serverRetry: nil, failures: 3)))
        #expect((30...60).contains(policy.delay(serverRetry: nil, failures: .max)))
        #expect((0.25...0.5).contains(policy.delay(serverRetry: 0, failures: 1)))
        // Without a floor, `retry: 0` still grows: from 1 ms.
        let floorless = ServerSentEvents.Reconnection(initialDelay: 3, minimumDelay: 0, maximumDelay: 60)
        #expect((0.001...0.002).contains(floorless.delay(serverRetry: 0, failures: 1)))
        #expect((30...60).contains(policy.delay(serverRetry: 0, failures: 20)))
        #expect((30...60).contains(policy.delay(serverRetry: 1e300, failures: 3)))
    }
}

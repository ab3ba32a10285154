import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When and how often a failed operation is sent again.
///
/// A retried operation is the same operation object: its completion runs once, after the last
/// attempt. By default only idempotent methods (GET, HEAD, PUT, DELETE, OPTIONS) are retried,
/// on 408, 429, 500, 502, 503 and 504 and on transport failures that say nothing reached the
/// server's application (timed out, connection lost, cannot connect, DNS). The delay honours
/// `Retry-After` (seconds or an HTTP date) up to ``maximumRetryAfter``, else grows
/// exponentially from ``baseDelay`` with jitter. A download interrupted mid-body resumes with
/// `Range` where the server supports it.
public struct RetryPolicy: Sendable {
    /// What the ``decide`` closure answers.
    public enum Decision: Sendable {
        /// Apply the policy's own rules.
        case useDefault
        /// Do not retry: the failure is final.
        case doNotRetry
        /// Retry after `delay` seconds (nil: the policy's backoff), optionally with another
        /// request (a refreshed token, say).
        case retry(after: TimeInterval?, request: URLRequest?)
    }

    /// What a ``decide`` closure is told about a failed attempt.
    public struct Context: Sendable {
        /// The request of the failed attempt.
        public let request: URLRequest
        /// Its response, when one arrived.
        public let response: HTTPURLResponse?
        /// The failure.
        public let error: ConveyorError
        /// Attempts made so far, the failed one included (1 after the first failure).
        public let attemptCount: Int

        /// Creates a context, for testing a policy or a ``RetryPolicy/decide`` closure.
        /// - Parameters:
        ///   - request: The failed attempt's request.
        ///   - response: Its response, if any.
        ///   - error: The failure.
        ///   - attemptCount: Attempts made so far, the failed one included.
        public init(request: URLRequest, response: HTTPURLResponse?, error: ConveyorError, attemptCount: Int) {
            self.request = request
            self.response = response
            self.error = error
            self.attemptCount = attemptCount
        }
    }

    /// Decides about one failure; must call `completion` exactly once, on any thread. It runs
    /// only while attempts remain, so it cannot make an operation loop.
    public typealias Decide = @Sendable (_ context: Context, _ completion: @escaping @Sendable (Decision) -> Void) -> Void

    /// The most attempts in all, the first included; 1 means never retry. Default 1.
    public var maximumAttempts: Int
    /// Status codes worth another attempt. Default 408, 429, 500, 502, 503, 504.
    public var retryableStatusCodes: Set<Int>
    /// Transport failures worth another attempt. Default ``ConveyorError/connectivityFailureCodes``:
    /// timed out, connection lost (reset, closed without a reply), cannot connect, cannot find
    /// host, DNS failure, not connected — as each transport classifies its errors. An
    /// unreachable proxy (``ConveyorError/RouteFailureReason/proxyUnreachable(proxy:error:)``)
    /// is retried by its error's code.
    public var retryableURLErrorCodes: Set<URLError.Code>
    /// Retry POST and PATCH too (off by default: they may not be safe to repeat).
    public var retriesNonIdempotentMethods: Bool
    /// The first backoff delay in seconds; doubled each attempt. Default 0.5.
    public var baseDelay: TimeInterval
    /// The longest backoff delay. Default 30 s.
    public var maximumDelay: TimeInterval
    /// The longest `Retry-After` honoured; a longer one makes the failure final. Default 60 s.
    public var maximumRetryAfter: TimeInterval
    /// Consulted before the rules for every failure that has attempts left; nil for none.
    public var decide: Decide?

    /// Creates a policy.
    /// - Parameters:
    ///   - maximumAttempts: Attempts in all; default 1 (no retry).
    ///   - retryableStatusCodes: Default 408, 429, 500, 502, 503, 504.
    ///   - retryableURLErrorCodes: Default ``ConveyorError/connectivityFailureCodes``.
    ///   - retriesNonIdempotentMethods: Default false.
    ///   - baseDelay: Default 0.5 s.
    ///   - maximumDelay: Default 30 s.
    ///   - maximumRetryAfter: Default 60 s.
    ///   - decide: A custom decision, consulted first; default nil.
    public init(
        maximumAttempts: Int = 1,
        retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        retryableURLErrorCodes: Set<URLError.Code> = ConveyorError.connectivityFailureCodes,
        retriesNonIdempotentMethods: Bool = false, baseDelay: TimeInterval = 0.5, maximumDelay: TimeInterval = 30,
        maximumRetryAfter: TimeInterval = 60, decide: Decide? = nil
    ) {
        self.maximumAttempts = maximumAttempts
        self.retryableStatusCodes = retryableStatusCodes
        self.retryableURLErrorCodes = retryableURLErrorCodes
        self.retriesNonIdempotentMethods = retriesNonIdempotentMethods
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
        self.decide = decide
    }

    /// Never retry (the default of every client).
    public static let none = RetryPolicy()

    /// Up to `attempts` attempts in all with the default rules.
    /// - Parameter attempts: Attempts in all, the first included.
    /// - Returns: The policy.
    public static func attempts(_ attempts: Int) -> RetryPolicy { RetryPolicy(maximumAttempts: attempts) }

    /// The policy's own answer for a failure: the delay before the next attempt, or nil.
    /// - Parameter context: The failure.
    /// - Returns: Seconds to wait, or nil for "do not retry".
    public func defaultDelay(for context: Context) -> TimeInterval? {
        guard context.attemptCount < maximumAttempts else { return nil }
        let method = HTTPMethod(rawValue: context.request.httpMethod ?? "GET")
        guard method.isIdempotent || retriesNonIdempotentMethods else { return nil }
        switch context.error {
        case .unacceptableStatusCode(let code, let response, _):
            guard retryableStatusCodes.contains(code) else { return nil }
            if let retryAfter = Self.retryAfter(response) {
                return retryAfter <= maximumRetryAfter ? retryAfter : nil
            }
        case .network(let error), .routeFailed(.proxyUnreachable(_, let error)):
            guard retryableURLErrorCodes.contains(error.code) else { return nil }
        case .timedOut:
            // Idle and resource timeouts alike: the next attempt gets fresh budgets.
            guard retryableURLErrorCodes.contains(.timedOut) else { return nil }
        default:
            return nil
        }
        return backoff(afterAttempt: context.attemptCount)
    }

    /// `baseDelay × 2^(attempt−1)`, capped at ``maximumDelay``, scaled by a random factor in
    /// 0.5…1 so that clients failing together do not retry together. Any input gives a delay
    /// within 0…10⁹ s: a huge attempt count reaches the cap, an infinite or NaN setting is clamped.
    /// - Parameter attempt: The attempt that failed (1 for the first).
    /// - Returns: The delay in seconds.
    public func backoff(afterAttempt attempt: Int) -> TimeInterval {
        Backoff.delay(base: baseDelay, doublings: attempt - 1, cap: maximumDelay)
    }

    /// The `Retry-After` of a response in seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3).
    static func retryAfter(_ response: HTTPURLResponse) -> TimeInterval? {
        guard let value = response.value(forHTTPHeaderField: "Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        // delta-seconds are digits only (`1e3`, `inf` and `nan` are not numbers here); huge ones saturate.
        if let seconds = Seconds.parseDeltaSeconds(value) { return seconds }
        // An HTTP-date in any of its three forms; anything else is no Retry-After at all.
        return HTTPDate.parse(value).map { max(0, $0.timeIntervalSinceNow) }
    }
}

import Foundation

extension ServerSentEvents {
    /// When a ``ServerSentEvents`` sequence reconnects, and when it gives up.
    ///
    /// The wait before a reconnection is the server's `retry` (or ``initialDelay`` until it sends
    /// one), kept within ``minimumDelay`` … ``maximumDelay``. After a connection that failed, or
    /// ended without delivering an event, the wait doubles with each such attempt in a row — with
    /// jitter (×0.5 … 1), up to ``maximumDelay`` — and an event resets it. A server sending
    /// `retry: 0` and closing, or a refused port, so costs a few connections a minute rather than
    /// a thousand a second. ``maximumFailedAttempts`` ends the sequence with
    /// ``ConveyorError/StreamFailureReason/reconnectionGaveUp(attempts:lastError:)``.
    public struct Reconnection: Sendable, Equatable {
        /// Seconds before reconnecting until the server sends `retry`. Default 3.
        public var initialDelay: TimeInterval
        /// The shortest wait, whatever the server's `retry` says. Default 0.25 s.
        public var minimumDelay: TimeInterval
        /// The longest wait: the cap of the backoff and of the server's `retry`. Default 60 s.
        public var maximumDelay: TimeInterval
        /// Failed or empty connections in a row after which the sequence throws; nil (the
        /// default) reconnects for as long as it is iterated, as browsers' `EventSource` does.
        public var maximumFailedAttempts: Int?

        /// Creates a policy. Values are clamped: delays to 0 … 10⁹ s (NaN is 0), the minimum to at
        /// most the maximum, and attempts to at least 1.
        /// - Parameters:
        ///   - initialDelay: Seconds before reconnecting until the server sends `retry`; default 3.
        ///   - minimumDelay: The floor of every wait; default 0.25.
        ///   - maximumDelay: The cap of every wait; default 60.
        ///   - maximumFailedAttempts: Failed or empty connections in a row before giving up; nil (the
        ///     default) never gives up.
        public init(
            initialDelay: TimeInterval = 3, minimumDelay: TimeInterval = 0.25, maximumDelay: TimeInterval = 60,
            maximumFailedAttempts: Int? = nil
        ) {
            self.initialDelay = initialDelay
            self.minimumDelay = minimumDelay
            self.maximumDelay = maximumDelay
            self.maximumFailedAttempts = maximumFailedAttempts
        }

        /// The defaults: 3 s until the server says otherwise, 0.25 … 60 s, never give up.
        public static let `default` = Reconnection()

        /// The wait before the next connection.
        /// - Parameters:
        ///   - serverRetry: The server's last `retry`, in seconds, as sent; nil when none.
        ///   - failures: Failed or empty connections in a row (0 after one that delivered an event).
        /// - Returns: Seconds, within ``minimumDelay`` … ``maximumDelay``.
        func delay(serverRetry: TimeInterval?, failures: Int) -> TimeInterval {
            let cap = Seconds.clamped(maximumDelay)
            let floor = Seconds.clamped(minimumDelay, to: 0...cap)
            let base = Seconds.clamped(serverRetry ?? initialDelay, to: floor...cap)
            guard failures > 0 else { return base }
            // Doubled once per failure in a row; from at least 1 ms, so that `retry: 0` grows too.
            return Backoff.delay(base: Swift.max(base, 0.001), doublings: failures, cap: cap, floor: floor)
        }

        /// Whether `failures` in a row end the sequence.
        func givesUp(after failures: Int) -> Bool {
            maximumFailedAttempts.map { failures >= Swift.max(1, $0) } ?? false
        }
    }
}

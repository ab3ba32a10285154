import Foundation

extension Outbox {
    /// How an outbox delivers, retries and limits its items. Set once, when the outbox is made.
    public struct Configuration: Sendable {
        /// Items sent at once. 1 (the default) delivers in order: an item is sent only after the
        /// one before it has its result. More sends that many at a time, from the front of the
        /// line, and results arrive as they come.
        public var maximumConcurrentDeliveries = 1
        /// Attempts that reached the server (an answer to retry, or a connection lost
        /// mid-exchange) before an item becomes a dead letter. Failing to connect at all is not
        /// an attempt: offline, items wait without using their attempts up. Default 10.
        public var maximumAttempts = 10
        /// The age at which an item not yet delivered becomes a dead letter, measured from
        /// ``Outbox/send(method:path:parameters:headers:requestSerializer:)`` on the wall clock
        /// (it survives restarts). Default 7 days.
        public var maximumAge: TimeInterval = 7 * 24 * 3600
        /// The first retry delay in seconds; doubled after each failure, with jitter. Default 1.
        public var baseDelay: TimeInterval = 1
        /// The longest retry delay, for backoff and for a failure to connect. Default 300 s.
        public var maximumDelay: TimeInterval = 300
        /// The longest `Retry-After` honoured; a longer one waits this long. Default 3,600 s.
        public var maximumRetryAfter: TimeInterval = 3600
        /// Status codes retried (408, 425, 429, 500, 502, 503, 504 by default); any other status
        /// outside the client's acceptable codes is a final failure, reported and removed.
        public var retryableStatusCodes: Set<Int> = [408, 425, 429, 500, 502, 503, 504]
        /// Items waiting at most; ``Outbox/send(method:path:parameters:headers:requestSerializer:)``
        /// throws ``ConveyorError/OutboxFailureReason/itemLimitReached(limit:)`` past it. Default 10,000.
        public var maximumItemCount = 10_000
        /// Bytes the waiting items may take on disk (bodies and records); a `send` whose body
        /// would pass it throws ``ConveyorError/OutboxFailureReason/byteLimitReached(limit:bytes:)``.
        /// Default 1 GiB.
        public var maximumBytes: Int64 = 1 << 30
        /// Bodies up to this size are read into memory for their attempt; larger ones are
        /// uploaded from their file. Default 1 MiB.
        public var inMemoryBodyLimit: Int64 = 1 << 20

        /// The defaults: in order, 10 attempts, 7 days, backoff from 1 s to 5 min, 10,000 items, 1 GiB.
        public static let `default` = Configuration()

        /// Creates the default configuration; set the properties you need.
        public init() {}

        /// This configuration with every number in range, as ``Outbox`` uses it: a NaN time is
        /// the default's, a negative one 0 and an infinite one 10⁹ s (about 31
        /// years); at least one delivery at a time and one attempt; limits of at least 0.
        /// Without it, `Retry-After` capped by a NaN maximum trapped on a range whose bounds
        /// were out of order.
        var clamped: Configuration {
            let defaults = Configuration.default
            func time(_ value: TimeInterval, _ fallback: TimeInterval) -> TimeInterval {
                value.isNaN ? fallback : Seconds.clamped(value)
            }
            var result = self
            result.maximumConcurrentDeliveries = max(1, maximumConcurrentDeliveries)
            result.maximumAttempts = max(1, maximumAttempts)
            result.maximumAge = time(maximumAge, defaults.maximumAge)
            result.baseDelay = time(baseDelay, defaults.baseDelay)
            result.maximumDelay = time(maximumDelay, defaults.maximumDelay)
            result.maximumRetryAfter = time(maximumRetryAfter, defaults.maximumRetryAfter)
            result.maximumItemCount = max(0, maximumItemCount)
            result.maximumBytes = max(0, maximumBytes)
            result.inMemoryBodyLimit = max(0, inMemoryBodyLimit)
            return result
        }
    }
}

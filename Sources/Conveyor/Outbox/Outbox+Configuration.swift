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
    }
}

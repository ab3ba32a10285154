import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Outbox {
    /// One request in an outbox, as it is stored: everything but the body, which stays in
    /// ``bodyFile``. With the client's default headers and credentials added, it is what each
    /// attempt sends — and what a background `URLSession` upload task would need.
    public struct Item: Sendable, Identifiable {
        /// Fixed when the item is written; also its `Idempotency-Key`.
        public let id: UUID
        /// The `Idempotency-Key` header value every attempt sends (a quoted UUID, the IETF
        /// httpapi draft's Structured Field string).
        public let idempotencyKey: String
        /// When ``Outbox/send(method:path:parameters:headers:requestSerializer:)`` accepted it.
        public let createdAt: Date
        /// The method.
        public let method: HTTPMethod
        /// The absolute URL, query included.
        public let url: URL
        /// The headers stored with it: yours, the serializer's (`Content-Type`) and `Idempotency-Key`.
        public let headers: HTTPHeaders
        /// The body's size; nil when the request has none.
        public let bodyLength: Int64?
        /// A body of up to 64 KiB, which is kept inside the item's record file (one file to
        /// write and sync per item instead of two); nil when there is none or it is in ``bodyFile``.
        public let body: Data?
        /// A larger body's file while the item waits (a dead letter's stays); nil when the body
        /// is in ``body`` or there is none.
        public let bodyFile: URL?
        /// Attempts that reached the server so far.
        public let attempts: Int
        /// The last attempt's failure as text, nil before any.
        public let lastError: String?

        init(stored: OutboxStoredItem, bodyFile: URL?) {
            let record = stored.record
            id = record.id
            idempotencyKey = record.idempotencyKey
            createdAt = record.createdAt
            method = HTTPMethod(rawValue: record.method)
            url = URL(string: record.url)!  // checked when the record was read
            headers = HTTPHeaders(uniqueFields: record.headers.map { (name: $0[0], value: $0[1]) })
            bodyLength = record.bodyLength
            body = stored.inlineBody
            self.bodyFile = record.bodyLength == nil || record.bodyInline ? nil : bodyFile
            attempts = record.attempts
            lastError = record.lastError
        }
    }

    /// How an item ended.
    public enum Outcome: Sendable {
        /// The server accepted it (a status the client validates): the response and its body.
        case succeeded(HTTPResponse<Data>)
        /// A final failure, not worth another attempt (a 4xx, an unusable request, a corrupt
        /// item file). The item is removed once this is handed over.
        case failed(ConveyorError)
        /// It ran out of attempts or time (``ConveyorError/OutboxFailureReason/attemptsExhausted(attempts:lastError:)``,
        /// ``ConveyorError/OutboxFailureReason/expired(age:)``) and is kept as a dead letter:
        /// ``Outbox/deadLetters()``, ``Outbox/retryDeadLetter(_:)``, ``Outbox/removeDeadLetter(_:)``.
        case deadLettered(ConveyorError)
    }

    /// An item's result, handed to the result handler or the ``Outbox/results`` sequence once.
    public struct ItemResult: Sendable {
        /// The item's identifier, as `send` returned it.
        public let id: UUID
        /// The item; nil only when its file was corrupt (the outcome says where it went).
        public let item: Item?
        /// How it ended.
        public let outcome: Outcome
        /// True when this result may have been handed over before: the process stopped while
        /// a handler had it (or a sequence's loop body, before it asked for the next one), or
        /// it is a dead letter the last process had not finished reporting. The server saw the
        /// same `Idempotency-Key` both times.
        public let isRedelivery: Bool
    }
}

import Foundation

extension HTTPClient {
    /// Opens (or creates) a durable outbox in `directory` whose items this client sends:
    /// requests written to disk before `send` returns, delivered when the server can be
    /// reached, retried, and reported once, across crashes and restarts (<doc:SendingWhileOffline>).
    ///
    /// Make it once at start-up, beside the client, and register its result handler there.
    /// - Parameters:
    ///   - directory: The outbox's own directory; one outbox at a time may use it.
    ///   - configuration: Delivery, retry and limits; default ``Outbox/Configuration/default``.
    /// - Returns: The outbox.
    /// - Throws: ``ConveyorError/outboxFailed(reason:)`` when the directory is in use by another
    ///   outbox or cannot be created.
    public func outbox(directory: URL, configuration: Outbox.Configuration = .default) throws -> Outbox {
        try Outbox(directory: directory, client: self, configuration: configuration)
    }
}

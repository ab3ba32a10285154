import Foundation

extension Outbox {
    /// The outbox's results as an `AsyncSequence` (``Outbox/results``). A result is handed over
    /// when the loop asks for the next one, leaves, or the outbox is closed.
    public struct Results: AsyncSequence, Sendable {
        let channel: OutboxResultChannel

        /// Creates the iterator; the first one starts delivery, a second one ends at once.
        public func makeAsyncIterator() -> Iterator {
            Iterator(box: IteratorBox(channel: channel))
        }

        /// Iterates the results.
        public struct Iterator: AsyncIteratorProtocol {
            let box: IteratorBox

            /// The next result; nil once the outbox closed, the Task was cancelled, or another
            /// iterator is the consumer.
            public mutating func next() async -> ItemResult? {
                await box.next()
            }
        }
    }

    /// Registers the iterator as the consumer, hands over the result the loop body had when it
    /// asks for the next, and unregisters when the loop ends.
    final class IteratorBox: Sendable {
        private let channel: OutboxResultChannel
        private let isConsumer: Bool

        init(channel: OutboxResultChannel) {
            self.channel = channel
            isConsumer = channel.registerIterator()
        }

        deinit {
            if isConsumer { channel.unregisterIterator() }
        }

        func next() async -> ItemResult? {
            guard isConsumer else { return nil }
            channel.acknowledgeTaken()
            return await channel.take()?.result
        }
    }
}

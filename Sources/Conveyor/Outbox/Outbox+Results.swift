import ConveyorLocking
import Foundation

extension Outbox {
    /// The outbox's results as an `AsyncSequence` (``Outbox/results``). A result is handed over
    /// when the loop asks for the next one, or leaves.
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

    /// Holds the result the loop body has (acknowledged when it asks for the next) and
    /// unregisters the iterator when the loop ends.
    final class IteratorBox: Sendable {
        private let channel: OutboxResultChannel
        private let isConsumer: Bool
        private let unacknowledged = Lock<OutboxResultChannel.Pending?>(nil)

        init(channel: OutboxResultChannel) {
            self.channel = channel
            isConsumer = channel.registerIterator()
        }

        deinit {
            unacknowledged.withLock { $0 }?.acknowledge()
            if isConsumer { channel.unregisterIterator() }
        }

        func next() async -> ItemResult? {
            let previous = unacknowledged.withLock { value -> OutboxResultChannel.Pending? in
                defer { value = nil }
                return value
            }
            previous?.acknowledge()
            guard isConsumer, let pending = await channel.take() else { return nil }
            unacknowledged.withLock { $0 = pending }
            return pending.result
        }
    }
}

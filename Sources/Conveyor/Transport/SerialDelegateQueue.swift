import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking

    /// The URLSession transport's delegate queue on Linux: `OperationQueue`'s interface over two
    /// lists of blocks drained one at a time on a serial dispatch queue.
    ///
    /// corelibs hands every delegate callback to `addOperation(_:)` — one per 64 kB of a body
    /// libcurl reads, one per chunk it receives, three or four per small request — and the
    /// operation queue's own bookkeeping for one block is a `BlockOperation` with three locks of
    /// its own, a work item and some forty lock round trips. Without them a 1 MiB POST takes a
    /// tenth less of the client's CPU (`perf record`, three alternating runs of 500 with
    /// `conveyor-bench --profile "Conveyor async upload"`); raw `upload(for:from:)` has no
    /// delegate, and so none of those callbacks.
    ///
    /// What is added runs one at a time, in the order it was added — what corelibs and the
    /// transport rely on (a task's events in order; a cancel after a redirect callback already
    /// queued) — except an `Operation` whose `queuePriority` is above `.normal`, which runs before
    /// the waiting blocks, as `OperationQueue` runs it (the transport's cancels jump queued body
    /// chunks). Only the entry points corelibs (version 6) and the transport use are routed:
    /// blocks, operations and barrier blocks; the queue is never suspended, waited on or counted.
    /// Apple's URLSession does not call `addOperation(_:)`, so there the transport keeps a plain
    /// `OperationQueue`.
    ///
    /// It is also the executor of the transport's transfers (``TransferExecutor``): an
    /// operation's other events run here between the session's callbacks, a cancel in the
    /// urgent lane.
    final class SerialDelegateQueue: OperationQueue, TransferExecutor, @unchecked Sendable {
        // @unchecked Sendable: the mutable state is `lanes`, behind one Lock; `worker` is
        // immutable, `drainer` an atomic. OperationQueue's own state is not used.
        typealias Block = @Sendable () -> Void

        private struct Lanes {
            var urgent = BlockList()
            var normal = BlockList()
            /// A drain is scheduled or running: the next block waits for it.
            var draining = false
        }

        private let lanes = Lock(Lanes())
        private let worker: DispatchQueue
        /// The thread draining the lanes now.
        private let drainer = ExecutorThread()

        init(label: String) {
            worker = DispatchQueue(label: label)
            super.init()
            name = label
            maxConcurrentOperationCount = 1
        }

        override func addOperation(_ block: @escaping @Sendable () -> Void) {
            enqueue(block, urgent: false)
        }

        override func addOperation(_ operation: Operation) {
            enqueue({ operation.start() }, urgent: operation.queuePriority.rawValue > Operation.QueuePriority.normal.rawValue)
        }

        override func addBarrierBlock(_ barrier: @escaping @Sendable () -> Void) {
            // One at a time already: every block is a barrier.
            enqueue(barrier, urgent: false)
        }

        func execute(urgent: Bool, _ work: @escaping @Sendable () -> Void) {
            enqueue(work, urgent: urgent)
        }

        var isCurrent: Bool { drainer.isCurrent }

        private func enqueue(_ block: @escaping Block, urgent: Bool) {
            let startsDrain = lanes.withLock { lanes in
                if urgent { lanes.urgent.append(block) } else { lanes.normal.append(block) }
                defer { lanes.draining = true }
                return !lanes.draining
            }
            if startsDrain { worker.async { self.drain() } }
        }

        private func drain() {
            drainer.running {
                while let next = lanes.withLock({ lanes -> Block? in
                    guard let next = lanes.urgent.popFirst() ?? lanes.normal.popFirst() else {
                        lanes.draining = false
                        return nil
                    }
                    return next
                }) {
                    next()
                }
            }
        }
    }

#else
    /// The URLSession transport's executor on Apple platforms: its serial delegate queue.
    final class OperationQueueExecutor: TransferExecutor {
        // Sendable, checked by the compiler: `queue` is immutable (OperationQueue is Sendable).
        let queue: OperationQueue

        init(_ queue: OperationQueue) { self.queue = queue }

        func execute(urgent: Bool, _ work: @escaping @Sendable () -> Void) {
            let operation = BlockOperation(block: work)
            if urgent { operation.queuePriority = .veryHigh }
            queue.addOperation(operation)
        }

        var isCurrent: Bool { OperationQueue.current === queue }
    }
#endif

#if canImport(FoundationNetworking)
    /// A first-in, first-out list of blocks with amortised O(1) removal from the front (a
    /// backlog of body chunks can hold thousands).
    private struct BlockList {
        private var blocks: [SerialDelegateQueue.Block?] = []
        private var head = 0

        mutating func append(_ block: @escaping SerialDelegateQueue.Block) { blocks.append(block) }

        mutating func popFirst() -> SerialDelegateQueue.Block? {
            guard head < blocks.count else { return nil }
            let block = blocks[head]
            blocks[head] = nil
            head += 1
            if head == blocks.count {
                blocks.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024, head * 2 >= blocks.count {
                blocks.removeFirst(head)
                head = 0
            }
            return block
        }
    }
#endif

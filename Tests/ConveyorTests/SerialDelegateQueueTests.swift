#if canImport(FoundationNetworking)
    @testable import Conveyor
    import ConveyorLocking
    import Foundation
    import FoundationNetworking
    import Testing

    /// The URLSession transport's delegate queue on Linux: whatever corelibs and the transport add
    /// — blocks, operations, barrier blocks, from any thread — runs one at a time, in the order
    /// each thread added it, and all of it runs.
    @Suite("SerialDelegateQueue: corelibs' delegate callbacks in order, one at a time")
    struct SerialDelegateQueueTests {
        /// What ran, and whether two ever ran at once.
        private struct Record {
            var ran: [(thread: Int, sequence: Int)] = []
            var running = 0
            var overlapped = false
        }

        @Test("Blocks, operations and barrier blocks from four threads: each thread's in order, never two at once")
        func ordersEverythingAdded() throws {
            let queue = SerialDelegateQueue(label: "test.serial-delegate")
            let record = Lock(Record())
            let perThread = 500
            @Sendable func work(_ thread: Int, _ sequence: Int) -> @Sendable () -> Void {
                {
                    record.withLock { record in
                        record.running += 1
                        if record.running > 1 { record.overlapped = true }
                    }
                    record.withLock { record in
                        record.ran.append((thread, sequence))
                        record.running -= 1
                    }
                }
            }
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for sequence in 0..<perThread {
                    switch sequence % 3 {
                    case 0: queue.addOperation(work(thread, sequence))
                    case 1: queue.addOperation(BlockOperation(block: work(thread, sequence)))
                    default: queue.addBarrierBlock(work(thread, sequence))
                    }
                }
            }
            let drained = DispatchSemaphore(value: 0)
            queue.addOperation { drained.signal() }
            #expect(drained.wait(timeout: .now() + 30) == .success)

            let result = record.withLock { $0 }
            #expect(!result.overlapped)
            #expect(result.ran.count == 4 * perThread)
            for thread in 0..<4 {
                let sequences = result.ran.filter { $0.thread == thread }.map(\.sequence)
                #expect(sequences == Array(0..<perThread), "thread \(thread)'s additions out of order or missing")
            }
        }

        @Test("An operation of priority above normal runs before the blocks waiting (the transport's cancel)")
        func urgentOperationJumpsWaitingBlocks() {
            let queue = SerialDelegateQueue(label: "test.serial-delegate")
            let order = Lock([String]())
            let gate = DispatchSemaphore(value: 0)
            let drained = DispatchSemaphore(value: 0)
            let started = DispatchSemaphore(value: 0)
            queue.addOperation {
                started.signal()
                gate.wait()
                order.withLock { $0.append("running") }
            }
            // The blocks below wait behind one that runs, as body chunks wait behind a callback.
            #expect(started.wait(timeout: .now() + 30) == .success)
            for index in 0..<3 { queue.addOperation { order.withLock { $0.append("chunk \(index)") } } }
            let cancel = BlockOperation { order.withLock { $0.append("cancel") } }
            cancel.queuePriority = .veryHigh
            queue.addOperation(cancel)
            let normal = BlockOperation { order.withLock { $0.append("normal operation") } }
            queue.addOperation(normal)
            queue.addOperation { drained.signal() }
            gate.signal()
            #expect(drained.wait(timeout: .now() + 30) == .success)
            #expect(order.withLock { $0 } == ["running", "cancel", "chunk 0", "chunk 1", "chunk 2", "normal operation"])
        }

        @Test("The URLSession transport's session delivers its callbacks through it")
        func transportUsesIt() {
            let transport = URLSessionTransport(configuration: .ephemeral)
            #expect(transport.session.delegateQueue is SerialDelegateQueue)
            transport.session.invalidateAndCancel()
        }
    }
#endif

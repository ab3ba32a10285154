import ConveyorLocking
import Foundation

/// A one-shot timer on the shared ``DeadlineScheduler``: fires its handler once at its
/// deadline unless cancelled first; `schedule(after:)` arms it again (also from its handler).
/// Releasing the timer cancels it.
final class DeadlineTimer: Sendable {
    let id: UInt64
    private let scheduler: DeadlineScheduler

    fileprivate init(id: UInt64, scheduler: DeadlineScheduler) {
        self.id = id
        self.scheduler = scheduler
    }

    deinit { scheduler.cancel(id) }

    /// Moves the deadline to `seconds` from now (also after the timer fired: it fires again).
    func schedule(after seconds: Double) { scheduler.reschedule(id, after: seconds) }

    /// Stops the timer; its handler will not run (unless it is already running).
    func cancel() { scheduler.cancel(id) }
}

/// Every operation timer (idle, resource, retry back-off) on one thread.
///
/// A `DispatchSourceTimer` per operation costs a wake-up of libdispatch's manager thread to
/// arm and another to cancel — for a small request, two context switches on the critical
/// path (measured with perf on the curl transport: 7 % of all CPU). Here arming a timer whose
/// deadline is later than the earliest one — every idle timeout of a new request — is a
/// heap insertion under a lock, with no wake-up; the thread only wakes when a deadline is
/// due or an earlier one arrives.
final class DeadlineScheduler: Sendable {
    // Sendable, checked by the compiler: the mutable state is `state`, behind one Lock; `wakeUp` is
    // a DispatchSemaphore, which is thread-safe.

    static let shared = DeadlineScheduler()

    fileprivate struct Entry {
        let deadline: UInt64
        let id: UInt64
        let generation: UInt64
    }

    fileprivate struct Timer {
        var deadline: UInt64
        var generation: UInt64
        /// Whether an entry of the current generation waits in the heap (false once fired).
        var armed = true
        let handler: @Sendable () -> Void
    }

    fileprivate struct State {
        var heap: [Entry] = []
        var timers: [UInt64: Timer] = [:]
        var nextID: UInt64 = 1
        var threadRunning = false
        /// The deadline the thread sleeps until; an earlier one must wake it.
        var sleepingUntil = UInt64.max
    }

    private let state = Lock(State())
    private let wakeUp = DispatchSemaphore(value: 0)

    /// Calls `handler` on the scheduler's thread `seconds` from now.
    func schedule(after seconds: Double, handler: @escaping @Sendable () -> Void) -> DeadlineTimer {
        let deadline = Self.deadline(after: seconds)
        let (id, wake, start) = state.withLock { state -> (UInt64, Bool, Bool) in
            let id = state.nextID
            state.nextID += 1
            state.timers[id] = Timer(deadline: deadline, generation: 0, handler: handler)
            state.push(Entry(deadline: deadline, id: id, generation: 0))
            let start = !state.threadRunning
            state.threadRunning = true
            return (id, deadline < state.sleepingUntil, start)
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "org.conveyor.timers"
            thread.start()
        } else if wake {
            wakeUp.signal()
        }
        return DeadlineTimer(id: id, scheduler: self)
    }

    fileprivate func reschedule(_ id: UInt64, after seconds: Double) {
        let deadline = Self.deadline(after: seconds)
        let wake = state.withLock { state -> Bool in
            guard var timer = state.timers[id] else { return false }
            timer.deadline = deadline
            timer.generation += 1
            timer.armed = true
            state.timers[id] = timer
            state.push(Entry(deadline: deadline, id: id, generation: timer.generation))
            return deadline < state.sleepingUntil
        }
        if wake { wakeUp.signal() }
    }

    fileprivate func cancel(_ id: UInt64) {
        state.withLock { state in
            state.timers[id] = nil
            // Cancelled entries stay in the heap until due; rebuild it when they dominate.
            if state.heap.count > 1024, state.heap.count > 4 * state.timers.count { state.rebuild() }
        }
    }

    private static func deadline(after seconds: Double) -> UInt64 {
        DispatchTime.now().uptimeNanoseconds &+ Seconds.nanoseconds(seconds)
    }

    private func run() {
        while true {
            let (due, sleepUntil) = state.withLock { state -> ([@Sendable () -> Void], UInt64) in
                let now = DispatchTime.now().uptimeNanoseconds
                var due: [@Sendable () -> Void] = []
                while let first = state.heap.first, first.deadline <= now {
                    state.popFirst()
                    // Only the entry of a timer's current generation counts; the rest are
                    // leftovers of cancelled or moved timers.
                    // The timer stays registered (its handler may arm it again) until it is
                    // cancelled or released.
                    if var timer = state.timers[first.id], timer.generation == first.generation {
                        timer.armed = false
                        state.timers[first.id] = timer
                        due.append(timer.handler)
                    }
                }
                state.sleepingUntil = due.isEmpty ? (state.heap.first?.deadline ?? UInt64.max) : 0
                return (due, state.sleepingUntil)
            }
            if !due.isEmpty {
                due.forEach { $0() }
                continue
            }
            if sleepUntil == UInt64.max {
                wakeUp.wait()
            } else {
                _ = wakeUp.wait(timeout: DispatchTime(uptimeNanoseconds: sleepUntil))
            }
        }
    }
}

extension DeadlineScheduler.State {
    /// A binary min-heap on `deadline`.
    fileprivate mutating func push(_ entry: DeadlineScheduler.Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    fileprivate mutating func popFirst() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    fileprivate mutating func rebuild() {
        // Only armed timers: a fired one stays registered (to be armed again) without an entry.
        let live = timers.filter(\.value.armed).map {
            DeadlineScheduler.Entry(deadline: $0.value.deadline, id: $0.key, generation: $0.value.generation)
        }
        heap.removeAll(keepingCapacity: true)
        live.forEach { push($0) }
    }
}

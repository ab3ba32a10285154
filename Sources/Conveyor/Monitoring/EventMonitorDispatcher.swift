import ConveyorLocking
import Foundation

/// Hands a client's events to its monitors on one serial queue, in order, without the
/// transfer's thread ever waiting: an event is appended under a lock, and a drain is scheduled
/// only when none is pending, ``batchDelay`` later — so events share a hop. A wake-up per event
/// cost 25 µs of CPU per request at 16 in flight with three no-op monitors (1.17x the same
/// client without them, in `conveyor-bench`); gathered for a millisecond they cost a lock and
/// an append each.
final class EventMonitorDispatcher: Sendable {
    // Sendable, checked by the compiler: the pending events and the drain flag are in `state`,
    // behind one Lock; the monitors and the queue are immutable.
    typealias Event = @Sendable (any EventMonitor) -> Void

    private struct State {
        var pending: [Event] = []
        var draining = false
    }

    let monitors: [any EventMonitor]
    private let state = Lock(State())
    private let queue = DispatchQueue(label: "org.conveyor.event-monitors")
    /// How long events gather before the monitors are woken: a monitor hears of an event within
    /// about this much, which no observer of network requests notices.
    static let batchDelay = DispatchTimeInterval.milliseconds(1)

    init(monitors: [any EventMonitor]) {
        self.monitors = monitors
    }

    /// Queues `event` for every monitor.
    func post(_ event: @escaping Event) {
        let schedule = state.withLock { state -> Bool in
            state.pending.append(event)
            defer { state.draining = true }
            return !state.draining
        }
        if schedule { queue.asyncAfter(deadline: .now() + Self.batchDelay) { self.drain() } }
    }

    /// Runs the queued events, those posted meanwhile too, until none is left.
    private func drain() {
        while true {
            let events = state.withLock { state -> [Event] in
                if state.pending.isEmpty { state.draining = false }
                defer { state.pending.removeAll(keepingCapacity: true) }
                return state.pending
            }
            if events.isEmpty { return }
            for event in events {
                for monitor in monitors { event(monitor) }
            }
        }
    }

    /// Waits until every event posted so far has been handed to the monitors (tests, shutdown).
    func flush() {
        // Drains now on the monitors' queue (a drain still waiting for its delay then finds
        // nothing, or what was posted since).
        queue.sync { drain() }
    }
}

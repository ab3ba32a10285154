import ConveyorLocking
import Foundation

/// Hands a client's events to its monitors on one serial queue, in order, without the
/// transfer's thread ever waiting: an event is appended under a lock, and a drain is scheduled
/// only when none is pending — under load many events share one hop (three no-op monitors cost
/// a lock and an append per event, not a thread wake-up each).
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
        if schedule { queue.async { self.drain() } }
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
        queue.sync {}
        // A drain scheduled before the `sync` ran first; one posted since is later than asked for.
    }
}

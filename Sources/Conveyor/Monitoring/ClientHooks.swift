import Foundation

/// What a client hands every operation it adopts, one shared instance per client: its request
/// adapters and its event monitors. One pointer in each operation (8 bytes), allocated once.
final class ClientHooks: Sendable {
    // Sendable, checked by the compiler: immutable.
    let requestAdapters: [any RequestAdapter]
    /// Nil without monitors: operations then post no events at all.
    let monitors: EventMonitorDispatcher?

    init(requestAdapters: [any RequestAdapter], eventMonitors: [any EventMonitor]) {
        self.requestAdapters = requestAdapters
        monitors = eventMonitors.isEmpty ? nil : EventMonitorDispatcher(monitors: eventMonitors)
    }

    /// Nil when there is nothing to hand over.
    static func make(requestAdapters: [any RequestAdapter], eventMonitors: [any EventMonitor]) -> ClientHooks? {
        requestAdapters.isEmpty && eventMonitors.isEmpty ? nil : ClientHooks(requestAdapters: requestAdapters, eventMonitors: eventMonitors)
    }
}

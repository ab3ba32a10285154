import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// Posts `event` to the client's ``EventMonitor``s, if it has any. For the rarer events (a
    /// connection wait, a redirect, a retry, a cache answer); the frequent ones read the
    /// monitors in a lock they take anyway.
    func report(_ event: @escaping @Sendable (any EventMonitor) -> Void) {
        read(\.clientHooks)?.monitors?.post(self, event)
    }

    /// Lock → machine, and the client's monitors read in the same lock (for an event that is
    /// reported on every attempt: one lock, not two).
    func transferReporting(_ event: (inout TransferStateMachine) -> Void) -> EventMonitorDispatcher? {
        mutableState.withLock { state in
            event(&state.transfer)
            return state.clientHooks?.monitors
        }
    }
}

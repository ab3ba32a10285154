import ConveyorLocking
import Foundation

/// Counts running operations and says when a network activity indicator should show
/// (AFNetworking's `AFNetworkActivityIndicatorManager`).
///
/// It counts the operation start and finish notifications once ``isEnabled``. The indicator
/// appears only after ``activationDelay`` of continuous activity (short requests never flash
/// it) and disappears ``completionDelay`` after the last operation (back-to-back requests do
/// not make it flicker). ``visibilityChangeHandler`` drives the status bar on iOS, or a spinner
/// in a command-line tool.
public final class NetworkActivityIndicatorManager: Sendable {
    // Sendable, checked by the compiler: all mutable state is in `state`, behind one Mutex; the
    // scheduler is immutable.

    /// Runs work after a delay; injectable so tests advance a controllable clock.
    public protocol Scheduler: Sendable {
        /// Runs `work` after `delay` seconds unless the returned token is cancelled.
        /// - Parameters:
        ///   - delay: Seconds.
        ///   - work: The work.
        /// - Returns: Cancels the work when called.
        func schedule(after delay: TimeInterval, _ work: @escaping @Sendable () -> Void) -> @Sendable () -> Void
    }

    /// Schedules on a dispatch queue.
    public struct DispatchScheduler: Scheduler {
        let queue: DispatchQueue
        /// Creates the scheduler.
        /// - Parameter queue: Where the work runs.
        public init(queue: DispatchQueue) { self.queue = queue }
        /// Schedules `work` on the queue after `delay`; the returned closure stops work that has
        /// not started yet (one called later does nothing).
        public func schedule(after delay: TimeInterval, _ work: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
            // A flag behind a lock instead of a DispatchWorkItem, which Dispatch does not mark
            // Sendable: as with `DispatchWorkItem.cancel()`, a cancel before the work starts
            // stops it, and one after has no effect.
            let cancelled = Lock(false)
            queue.asyncAfter(deadline: Seconds.dispatchTime(after: delay)) {
                if !cancelled.withLock({ $0 }) { work() }
            }
            return { cancelled.withLock { $0 = true } }
        }
    }

    /// The manager apps use.
    public static let shared = NetworkActivityIndicatorManager()

    private struct State {
        var isEnabled = false
        var count = 0
        var visible = false
        var activationDelay: TimeInterval = 1.0
        var completionDelay: TimeInterval = 0.17
        var pending: (@Sendable () -> Void)?
        var handler: (@Sendable (Bool) -> Void)?
        /// Observer tokens: taken out under the lock and removed by the one caller that took them.
        var observers: [LockedReference<any NSObjectProtocol>] = []
        var filter: (@Sendable (HTTPRequestOperation) -> Bool)?
        /// Operations counted at start, so exactly those are uncounted at finish.
        var counted: Set<ObjectIdentifier> = []
    }
    private let state = Lock(State())
    private let scheduler: any Scheduler
    private let queue: DispatchQueue

    /// Creates a manager.
    /// - Parameters:
    ///   - queue: Where the visibility handler runs; default Conveyor's callback queue.
    ///   - scheduler: Runs the delays; default a ``DispatchScheduler`` on `queue`.
    public init(queue: DispatchQueue = .conveyorDefaultCallbackQueue, scheduler: (any Scheduler)? = nil) {
        self.queue = queue
        self.scheduler = scheduler ?? DispatchScheduler(queue: queue)
    }

    /// Whether operations are counted. Default false.
    public var isEnabled: Bool {
        get { state.withLock { $0.isEnabled } }
        set {
            let change = state.withLock { state -> Bool? in
                guard state.isEnabled != newValue else { return nil }
                state.isEnabled = newValue
                return newValue
            }
            if let change { change ? observe() : unobserve() }
        }
    }

    /// Seconds of activity before the indicator shows. Default 1.0: short requests never show it.
    public var activationDelay: TimeInterval {
        get { state.withLock { $0.activationDelay } }
        set { state.withLock { $0.activationDelay = newValue } }
    }

    /// Seconds after the last operation before the indicator hides. Default 0.17: long enough
    /// to bridge back-to-back requests, short enough to feel immediate.
    public var completionDelay: TimeInterval {
        get { state.withLock { $0.completionDelay } }
        set { state.withLock { $0.completionDelay = newValue } }
    }

    /// Called on the queue with `true` when the indicator should show and `false` when it should hide.
    public var visibilityChangeHandler: (@Sendable (Bool) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    /// Which operations count: `true` counts it; nil (the default) counts all.
    public var operationFilter: (@Sendable (HTTPRequestOperation) -> Bool)? {
        get { state.withLock { $0.filter } }
        set { state.withLock { $0.filter = newValue } }
    }

    /// Operations running now (plus manual increments).
    public var activityCount: Int { state.withLock { $0.count } }

    /// Whether the indicator should show now.
    public var isNetworkActivityIndicatorVisible: Bool { state.withLock { $0.visible } }

    /// Counts one more activity (for work that is not an operation).
    public func incrementActivityCount() {
        update { $0.count += 1 }
    }

    /// Counts one activity less; never below zero.
    public func decrementActivityCount() {
        update { $0.count = max(0, $0.count - 1) }
    }

    private func update(_ change: (inout State) -> Void) {
        let (previousPending, schedule) = state.withLock { state -> ((@Sendable () -> Void)?, (delay: TimeInterval, visible: Bool)?) in
            change(&state)
            let wanted = state.count > 0
            let previous = state.pending
            state.pending = nil
            guard wanted != state.visible else { return (previous, nil) }
            return (previous, (wanted ? state.activationDelay : state.completionDelay, wanted))
        }
        previousPending?()
        guard let schedule else { return }
        let cancel = scheduler.schedule(after: schedule.delay) { [weak self] in self?.apply(visible: schedule.visible) }
        state.withLock { $0.pending = cancel }
    }

    private func apply(visible: Bool) {
        let handler = state.withLock { state -> (@Sendable (Bool) -> Void)?? in
            guard (state.count > 0) == visible, state.visible != visible else { return nil }
            state.visible = visible
            state.pending = nil
            return .some(state.handler)
        }
        guard let handler else { return }
        if let handler { queue.async { handler(visible) } }
    }

    private func observe() {
        let center = NotificationCenter.default
        let observers = [
            center.addObserver(forName: .conveyorOperationDidStart, object: nil, queue: nil) { [weak self] notification in
                guard let self, let operation = notification.object as? HTTPRequestOperation else { return }
                let counts = self.state.withLock { state -> Bool in
                    guard state.filter?(operation) ?? true else { return false }
                    return state.counted.insert(ObjectIdentifier(operation)).inserted
                }
                if counts { self.incrementActivityCount() }
            },
            center.addObserver(forName: .conveyorOperationDidFinish, object: nil, queue: nil) { [weak self] notification in
                guard let self, let operation = notification.object as? HTTPRequestOperation else { return }
                // Only operations counted at their start are uncounted.
                if self.state.withLock({ $0.counted.remove(ObjectIdentifier(operation)) != nil }) { self.decrementActivityCount() }
            },
        ].map { LockedReference($0) }
        state.withLock { $0.observers = observers }
    }

    private func unobserve() {
        let observers = state.withLock { state in
            defer {
                state.observers = []
                state.count = 0
                state.counted = []
            }
            return state.observers
        }
        observers.forEach { NotificationCenter.default.removeObserver($0.value) }
    }
}

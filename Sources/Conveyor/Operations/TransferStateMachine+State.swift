import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension TransferStateMachine {
    /// Where the transfer is. Each case carries what only it has (the attempt in flight, what
    /// its consumer asked of a task not stored yet, the route of a response's body, whether the
    /// public lifecycle has moved yet), so no flag can contradict another; the data that is
    /// not state (counters, the task, timers, files, progress, metrics) stays in the
    /// ``TransferRecord``.
    ///
    /// ```
    /// idle ⇄ pausedBeforeStart
    ///   └─ start ─► preparing ─► [awaitingCredential] ─► [adapting] ─► connecting ─► receiving ─┐
    ///          ▲        ▲                                                  │             │       │
    ///          │        └──── retrying (deciding → backingOff) ◄──── failed ┴─────────────┘       │
    ///          └ resume ─ paused ◄── pause (any executing case)                                   │
    ///   every case ── claimCompletion ─► finished ◄───────────────────────────────── completed ───┘
    /// ```
    enum State: Equatable {
        /// Built, or resumed and about to execute again: the public lifecycle is `ready`.
        case idle(Idle)
        /// `pause()` came before the transfer ran (the lifecycle is `paused`); `resume()` makes it
        /// ready again.
        case pausedBeforeStart(Idle)
        /// Executing, with no attempt out: a run begins (start, resume), or a restart or a
        /// retry is about to send its request.
        case preparing
        /// Executing; the authenticator refreshes its credential before the attempt is sent
        /// (`replay`: the credential an attempt carried was refused, and the request is sent
        /// again once).
        case awaitingCredential(replay: Bool)
        /// The client's request adapters run for the attempt (the caller's code: the idle
        /// clock counts that time); no task yet.
        case adapting(InFlight)
        /// The attempt's task is being started, or started, and no head has arrived.
        case connecting(InFlight)
        /// The attempt's head was accepted; its body arrives. `Route` says whether it is the
        /// response delivered or a redirect followed once the body is read.
        case receiving(InFlight, Route)
        /// An attempt failed and may be sent again: the policy decides, then the back-off runs.
        case retrying(Retry)
        /// `pause()` stopped the transfer mid-run; what a ranged request can continue stays in
        /// the record. `announced`: the public lifecycle has moved to `paused` (until then
        /// the `OperationQueue` still sees it executing, and the move's KVO is still due).
        case paused(announced: Bool)
        /// The completion is claimed: every later event does nothing.
        case finished(Finished)
    }

    /// What a transfer that is not running knows.
    struct Idle: Equatable {
        /// The queue (or the caller) has called `start()`; an operation starts once.
        var started = false
        /// A client has enqueued it; an operation is enqueued once.
        var enqueued = false

        /// Enqueued now; false when it was enqueued or started before.
        mutating func enqueue() -> Bool {
            defer { enqueued = true }
            return !enqueued && !started
        }
    }

    /// The attempt the transfer listens to: events carrying another number are dropped.
    struct InFlight: Equatable {
        /// The attempt's number, in 4 bytes: every operation carries its state inline, and with
        /// an 8-byte number the machine would grow from 32 bytes to 40.
        private let stored: Int32
        /// What a consumer asked of the attempt's task before it was stored.
        var demand: Demand
        /// The transport waits for a connection: the idle timer does not count that time.
        var waitsForConnection: Bool

        init(number: Int, demand: Demand = .flowing, waitsForConnection: Bool = false) {
            stored = Int32(truncatingIfNeeded: number)
            self.demand = demand
            self.waitsForConnection = waitsForConnection
        }

        /// The attempt's number (``TransferRecord/attempt`` when it began).
        var number: Int { Int(stored) }
    }

    /// A pause a consumer asked for before the attempt's task was stored. Bytes can arrive
    /// before the task that carries them is stored (on curl the transport runs the new
    /// transfer at once), so the request waits here until ``taskStarted(_:attempt:)``.
    enum Demand: Equatable {
        /// Nothing asked.
        case flowing
        /// A consumer fell behind: pause the task when it is stored.
        case pauseWhenTaskStarts
        /// The transport paused the body itself at that request, before the task was stored;
        /// `caughtUp` when the consumer has caught up since (the task is resumed when stored).
        case pausedBeforeTask(caughtUp: Bool)
    }

    /// Where an accepted response head leads.
    enum Route: Equatable {
        /// The head is being checked: its body's route is not chosen yet.
        case undecided
        /// The response delivered: its head and body go to the hooks.
        case deliver
        /// A redirect followed once its body is read (``TransferRecord/pendingRedirect``); its
        /// body goes to no hook.
        case follow
    }

    /// Between a failed attempt and the next.
    enum Retry: Equatable {
        /// The retry policy (perhaps the caller's `decide`) is asked.
        case deciding
        /// The policy retries: the back-off timer runs.
        case backingOff
    }

    /// A claimed completion.
    struct Finished: Equatable {
        /// The public lifecycle: the one the completion found, until `transition(to: .finished)`
        /// moves it (with the KVO the `OperationQueue` needs), then `finished`.
        var lifecycle: Lifecycle
        /// The completion block ran (or there was none): drain's waiters are called at once.
        var completionRan = false
        /// The client's event monitors heard `requestDidFinish` (see ``EventMonitorDispatcher``).
        var monitorsHeard = false
    }

    // MARK: - What the state says

    /// The public lifecycle, read from the state.
    var lifecycle: Lifecycle {
        switch state {
        case .idle: .ready
        case .pausedBeforeStart: .paused
        case .preparing, .awaitingCredential, .adapting, .connecting, .receiving, .retrying: .executing
        case .paused(let announced): announced ? .paused : .executing
        case .finished(let finished): finished.lifecycle
        }
    }

    /// The completion is claimed: every later event does nothing.
    var isFinishing: Bool {
        if case .finished = state { return true }
        return false
    }

    /// The queue (or the caller) has called `start()`.
    var hasStarted: Bool {
        switch state {
        case .idle(let idle), .pausedBeforeStart(let idle): idle.started
        default: true
        }
    }

    /// The attempt events are listened to for; nil between attempts and when not running.
    var inFlight: InFlight? {
        switch state {
        case .adapting(let flight), .connecting(let flight), .receiving(let flight, _): flight
        default: nil
        }
    }

    /// Whether the transfer executes and may send an attempt (checked again when it begins).
    var mayBeginAttempt: Bool {
        switch state {
        case .preparing, .awaitingCredential, .adapting, .connecting, .receiving, .retrying: true
        case .idle, .pausedBeforeStart, .paused, .finished: false
        }
    }

    /// Changes the attempt in flight in place (its case stays); nil when none is.
    mutating func updateFlight<Answer>(_ change: (inout InFlight) -> Answer) -> Answer? {
        switch state {
        case .adapting(var flight):
            defer { state = .adapting(flight) }
            return change(&flight)
        case .connecting(var flight):
            defer { state = .connecting(flight) }
            return change(&flight)
        case .receiving(var flight, let route):
            defer { state = .receiving(flight, route) }
            return change(&flight)
        default: return nil
        }
    }

    /// Whether `attempt` is the one in flight, for an event of its transport. An attempt still
    /// adapting has no task (its delegate is made after the adapters answer): an event of its
    /// transport is impossible then.
    func isCurrentTransport(_ attempt: Int, _ event: @autoclosure () -> String) -> Bool {
        guard isCurrent(attempt) else { return false }
        if case .adapting = state {
            impossible("\(event()) before the adapters answered")
            return false
        }
        return true
    }

    /// An event the state cannot receive: a debug build stops here, a release build drops it.
    func impossible(_ event: String, file: StaticString = #fileID, line: UInt = #line) {
        assertionFailure("transfer event \(event) in \(state)", file: file, line: line)
    }
}

import Foundation

@testable import Conveyor

/// The rows of `TransferStateMachineTests` and `TransferStateMachineBookkeepingTests`: in the
/// state a fixture reaches by driving events, an event answers the action and leaves the state
/// shown. A cell that is not listed drops its event (answers `.drop`, leaves the state as it
/// was); the tests check that too, so a new event or case cannot be left undecided.
///
/// Reading guide: `f(n)` is the attempt `n` in flight (`f(1, .pauseWhenTaskStarts)` with a
/// consumer's pause waiting for its task, `f(1, waits: true)` waiting for a connection);
/// `i(…)` is what a transfer not running knows; `done(lifecycle)` is a claimed completion and
/// the public lifecycle it shows. The fixtures' response is a GET's 200 with a strong `ETag`
/// and 5 body bytes, so a retry or a resume continues it with `Range` (`resumeOffset: 5`).
enum TransferStateMachineTable {
    typealias Row = TransferStateMachineTests.Row<TransferStateMachineTests.Event>
    typealias BookRow = TransferStateMachineTests.Row<TransferStateMachineBookkeepingTests.Event>

    static func f(_ number: Int, _ demand: TransferStateMachine.Demand = .flowing, waits: Bool = false) -> TransferStateMachine.InFlight {
        TransferStateMachine.InFlight(number: number, demand: demand, waitsForConnection: waits)
    }
    static func i(started: Bool = false, enqueued: Bool = false) -> TransferStateMachine.Idle {
        TransferStateMachine.Idle(started: started, enqueued: enqueued)
    }
    static func done(_ lifecycle: TransferStateMachine.Lifecycle, ran: Bool = false, heard: Bool = false) -> TransferStateMachine.Finished {
        TransferStateMachine.Finished(lifecycle: lifecycle, completionRan: ran, monitorsHeard: heard)
    }

    /// The events that start, stop and steer a transfer.
    static let rows: [Row] = [
        // idle
        Row(.idle, .enqueue, .acted, .idle(i(enqueued: true))),
        Row(.idle, .start, .execute, .idle(i(started: true))),
        Row(.idle, .startCancelled, .finish, .idle(i(started: true))),
        Row(.idle, .pause, .pauseWaiting, .idle(i())),
        Row(.idle, .moveToExecuting, .acted, .preparing),
        Row(.idle, .moveToPaused, .acted, .pausedBeforeStart(i())),
        Row(.idle, .taskStarted, .cancelTask, .idle(i())),
        Row(.idle, .staleTask, .cancelTask, .idle(i())),
        Row(.idle, .attemptFailed, .finish, .idle(i())),
        Row(.idle, .claim, .finish, .finished(done(.ready))),

        // enqueued
        Row(.enqueued, .start, .execute, .idle(i(started: true, enqueued: true))),
        Row(.enqueued, .startCancelled, .finish, .idle(i(started: true, enqueued: true))),
        Row(.enqueued, .pause, .pauseWaiting, .idle(i(enqueued: true))),
        Row(.enqueued, .moveToExecuting, .acted, .preparing),
        Row(.enqueued, .moveToPaused, .acted, .pausedBeforeStart(i(enqueued: true))),
        Row(.enqueued, .taskStarted, .cancelTask, .idle(i(enqueued: true))),
        Row(.enqueued, .staleTask, .cancelTask, .idle(i(enqueued: true))),
        Row(.enqueued, .attemptFailed, .finish, .idle(i(enqueued: true))),
        Row(.enqueued, .claim, .finish, .finished(done(.ready))),

        // pausedBeforeStart
        Row(.pausedBeforeStart, .enqueue, .acted, .pausedBeforeStart(i(enqueued: true))),
        Row(.pausedBeforeStart, .start, .drop, .pausedBeforeStart(i(started: true))),
        Row(.pausedBeforeStart, .startCancelled, .drop, .pausedBeforeStart(i(started: true))),
        Row(.pausedBeforeStart, .cancel, .returnToReady, .pausedBeforeStart(i())),
        Row(.pausedBeforeStart, .moveToReady, .acted, .idle(i())),
        Row(.pausedBeforeStart, .taskStarted, .cancelTask, .pausedBeforeStart(i())),
        Row(.pausedBeforeStart, .staleTask, .cancelTask, .pausedBeforeStart(i())),
        Row(.pausedBeforeStart, .attemptFailed, .finish, .pausedBeforeStart(i())),
        Row(.pausedBeforeStart, .claim, .finish, .finished(done(.paused))),

        // startedWhilePaused
        Row(.startedWhilePaused, .enqueue, .drop, .pausedBeforeStart(i(started: true, enqueued: true))),
        Row(.startedWhilePaused, .cancel, .finish, .pausedBeforeStart(i(started: true))),
        Row(.startedWhilePaused, .moveToReady, .acted, .idle(i(started: true))),
        Row(.startedWhilePaused, .taskStarted, .cancelTask, .pausedBeforeStart(i(started: true))),
        Row(.startedWhilePaused, .staleTask, .cancelTask, .pausedBeforeStart(i(started: true))),
        Row(.startedWhilePaused, .attemptFailed, .finish, .pausedBeforeStart(i(started: true))),
        Row(.startedWhilePaused, .claim, .finish, .finished(done(.paused))),

        // preparing
        Row(.preparing, .cancel, .finish, .preparing),
        Row(.preparing, .pause, .stop(task: false), .paused(announced: false)),
        Row(.preparing, .moveToPaused, .acted, .paused(announced: true)),
        Row(.preparing, .beginAttempt, .attempt(ordinal: 1, resumeOffset: 0), .connecting(f(1))),
        Row(.preparing, .beginAdapting, .attempt(ordinal: 1, resumeOffset: 0), .adapting(f(1))),
        Row(.preparing, .taskStarted, .cancelTask, .preparing),
        Row(.preparing, .staleTask, .cancelTask, .preparing),
        Row(.preparing, .idleTimer, .reschedule, .preparing),
        Row(.preparing, .silentIdleTimer, .reschedule, .preparing),
        Row(.preparing, .attemptFailed, .askRetryPolicy(attemptCount: 1), .retrying(.deciding)),
        Row(.preparing, .credentialWait, .waits(1), .awaitingCredential(replay: false)),
        Row(.preparing, .claim, .finish, .finished(done(.executing))),

        // awaitingCredential
        Row(.awaitingCredential, .cancel, .finish, .awaitingCredential(replay: false)),
        Row(.awaitingCredential, .pause, .stop(task: false), .paused(announced: false)),
        Row(.awaitingCredential, .moveToPaused, .acted, .paused(announced: true)),
        Row(.awaitingCredential, .beginAttempt, .attempt(ordinal: 1, resumeOffset: 0), .connecting(f(1))),
        Row(.awaitingCredential, .beginAdapting, .attempt(ordinal: 1, resumeOffset: 0), .adapting(f(1))),
        Row(.awaitingCredential, .taskStarted, .cancelTask, .awaitingCredential(replay: false)),
        Row(.awaitingCredential, .staleTask, .cancelTask, .awaitingCredential(replay: false)),
        Row(.awaitingCredential, .idleTimer, .reschedule, .awaitingCredential(replay: false)),
        Row(.awaitingCredential, .silentIdleTimer, .reschedule, .awaitingCredential(replay: false)),
        Row(.awaitingCredential, .attemptFailed, .askRetryPolicy(attemptCount: 1), .retrying(.deciding)),
        Row(.awaitingCredential, .credentialWait, .giveUp(refreshes: 1), .awaitingCredential(replay: false)),
        Row(.awaitingCredential, .credentialApplied, .acted, .preparing),
        Row(.awaitingCredential, .claim, .finish, .finished(done(.executing))),

        // adapting
        Row(.adapting, .cancel, .finish, .adapting(f(1))),
        Row(.adapting, .pause, .stop(task: false), .paused(announced: false)),
        Row(.adapting, .moveToPaused, .acted, .paused(announced: true)),
        Row(.adapting, .beginAttempt, .attempt(ordinal: 2, resumeOffset: 0), .connecting(f(2))),
        Row(.adapting, .beginAdapting, .attempt(ordinal: 2, resumeOffset: 0), .adapting(f(2))),
        Row(.adapting, .adapted, .acted, .connecting(f(1))),
        Row(.adapting, .staleTask, .cancelTask, .adapting(f(1))),
        Row(.adapting, .idleTimer, .reschedule, .adapting(f(1))),
        Row(.adapting, .silentIdleTimer, .expire, .adapting(f(1))),
        Row(.adapting, .attemptFailed, .askRetryPolicy(attemptCount: 1), .retrying(.deciding)),
        Row(.adapting, .credentialWait, .waits(1), .awaitingCredential(replay: false)),
        Row(.adapting, .claim, .finish, .finished(done(.executing))),

        // connecting
        Row(.connecting, .cancel, .finish, .connecting(f(1))),
        Row(.connecting, .pause, .stop(task: false), .paused(announced: false)),
        Row(.connecting, .moveToPaused, .acted, .paused(announced: true)),
        Row(.connecting, .beginAttempt, .attempt(ordinal: 2, resumeOffset: 0), .connecting(f(2))),
        Row(.connecting, .beginAdapting, .attempt(ordinal: 2, resumeOffset: 0), .adapting(f(2))),
        Row(.connecting, .taskStarted, .acted, .connecting(f(1))),
        Row(.connecting, .staleTask, .cancelTask, .connecting(f(1))),
        Row(.connecting, .head, .accept(keep: false), .receiving(f(1), .undecided)),
        Row(.connecting, .bytesSent, .acted, .connecting(f(1))),
        Row(.connecting, .wantsPause, .acted, .connecting(f(1, .pausedBeforeTask(caughtUp: false)))),
        Row(.connecting, .idleTimer, .reschedule, .connecting(f(1))),
        Row(.connecting, .silentIdleTimer, .reschedule, .connecting(f(1))),
        Row(.connecting, .attemptFailed, .askRetryPolicy(attemptCount: 1), .retrying(.deciding)),
        Row(.connecting, .credentialWait, .waits(1), .awaitingCredential(replay: false)),
        Row(.connecting, .claim, .finish, .finished(done(.executing))),

        // connectingWithTask
        Row(.connectingWithTask, .cancel, .finish, .connecting(f(1))),
        Row(.connectingWithTask, .pause, .stop(task: true), .paused(announced: false)),
        Row(.connectingWithTask, .moveToPaused, .acted, .paused(announced: true)),
        Row(.connectingWithTask, .beginAttempt, .attempt(ordinal: 2, resumeOffset: 0), .connecting(f(2))),
        Row(.connectingWithTask, .beginAdapting, .attempt(ordinal: 2, resumeOffset: 0), .adapting(f(2))),
        Row(.connectingWithTask, .taskStarted, .acted, .connecting(f(1))),
        Row(.connectingWithTask, .staleTask, .cancelTask, .connecting(f(1))),
        Row(.connectingWithTask, .head, .accept(keep: false), .receiving(f(1), .undecided)),
        Row(.connectingWithTask, .bytesSent, .acted, .connecting(f(1))),
        Row(.connectingWithTask, .idleTimer, .reschedule, .connecting(f(1))),
        Row(.connectingWithTask, .silentIdleTimer, .expire, .connecting(f(1))),
        Row(.connectingWithTask, .attemptFailed, .askRetryPolicy(attemptCount: 1), .retrying(.deciding)),
        Row(.connectingWithTask, .credentialWait, .waits(1), .awaitingCredential(replay: false)),
        Row(.connectingWithTask, .claim, .finish, .finished(done(.executing))),

        // receiving
        Row(.receiving, .cancel, .finish, .receiving(f(1), .deliver)),
        Row(.receiving, .pause, .stop(task: true), .paused(announced: false)),
        Row(.receiving, .moveToPaused, .acted, .paused(announced: true)),
        Row(.receiving, .beginAttempt, .attempt(ordinal: 2, resumeOffset: 0), .connecting(f(2))),
        Row(.receiving, .beginAdapting, .attempt(ordinal: 2, resumeOffset: 0), .adapting(f(2))),
        Row(.receiving, .taskStarted, .acted, .receiving(f(1), .deliver)),
        Row(.receiving, .staleTask, .cancelTask, .receiving(f(1), .deliver)),
        Row(.receiving, .head, .accept(keep: false), .receiving(f(1), .undecided)),
        Row(.receiving, .chunk, .chunk(received: 6, streams: false, reports: true), .receiving(f(1), .deliver)),
        Row(.receiving, .bytesSent, .acted, .receiving(f(1), .deliver)),
        Row(.receiving, .idleTimer, .reschedule, .receiving(f(1), .deliver)),
        Row(.receiving, .silentIdleTimer, .expire, .receiving(f(1), .deliver)),
        Row(.receiving, .attemptFailed, .askRetryPolicy(attemptCount: 1), .retrying(.deciding)),
        Row(.receiving, .credentialWait, .waits(1), .awaitingCredential(replay: false)),
        Row(.receiving, .claim, .finish, .finished(done(.executing))),

        // following
        Row(.following, .cancel, .finish, .receiving(f(1), .follow)),
        Row(.following, .pause, .stop(task: true), .paused(announced: false)),
        Row(.following, .moveToPaused, .acted, .paused(announced: true)),
        Row(.following, .beginAttempt, .attempt(ordinal: 2, resumeOffset: 0), .connecting(f(2))),
        Row(.following, .beginAdapting, .attempt(ordinal: 2, resumeOffset: 0), .adapting(f(2))),
        Row(.following, .taskStarted, .acted, .receiving(f(1), .follow)),
        Row(.following, .staleTask, .cancelTask, .receiving(f(1), .follow)),
        Row(.following, .head, .accept(keep: false), .receiving(f(1), .undecided)),
        Row(.following, .chunk, .chunk(received: 6, streams: false, reports: false), .receiving(f(1), .follow)),
        Row(.following, .bytesSent, .acted, .receiving(f(1), .follow)),
        Row(.following, .idleTimer, .reschedule, .receiving(f(1), .follow)),
        Row(.following, .silentIdleTimer, .expire, .receiving(f(1), .follow)),
        Row(.following, .attemptFailed, .askRetryPolicy(attemptCount: 1), .retrying(.deciding)),
        Row(.following, .credentialWait, .waits(1), .awaitingCredential(replay: false)),
        Row(.following, .claim, .finish, .finished(done(.executing))),

        // deciding
        Row(.deciding, .cancel, .finish, .retrying(.deciding)),
        Row(.deciding, .pause, .stop(task: false), .paused(announced: false)),
        Row(.deciding, .moveToPaused, .acted, .paused(announced: true)),
        Row(.deciding, .beginAttempt, .attempt(ordinal: 2, resumeOffset: 0), .connecting(f(2))),
        Row(.deciding, .beginAdapting, .attempt(ordinal: 2, resumeOffset: 0), .adapting(f(2))),
        Row(.deciding, .taskStarted, .cancelTask, .retrying(.deciding)),
        Row(.deciding, .staleTask, .cancelTask, .retrying(.deciding)),
        Row(.deciding, .attemptFailed, .askRetryPolicy(attemptCount: 1), .retrying(.deciding)),
        Row(.deciding, .retryScheduled, .backOff(nextAttempt: 2), .retrying(.backingOff)),
        Row(.deciding, .credentialWait, .waits(1), .awaitingCredential(replay: false)),
        Row(.deciding, .claim, .finish, .finished(done(.executing))),

        // backingOff
        Row(.backingOff, .cancel, .finish, .retrying(.backingOff)),
        Row(.backingOff, .pause, .stop(task: false), .paused(announced: false)),
        Row(.backingOff, .moveToPaused, .acted, .paused(announced: true)),
        Row(.backingOff, .beginAttempt, .attempt(ordinal: 2, resumeOffset: 5), .connecting(f(2))),
        Row(.backingOff, .beginAdapting, .attempt(ordinal: 2, resumeOffset: 5), .adapting(f(2))),
        Row(.backingOff, .taskStarted, .cancelTask, .retrying(.backingOff)),
        Row(.backingOff, .staleTask, .cancelTask, .retrying(.backingOff)),
        Row(.backingOff, .attemptFailed, .askRetryPolicy(attemptCount: 2), .retrying(.deciding)),
        Row(.backingOff, .retryTimerFired, .sendAgain, .preparing),
        Row(.backingOff, .credentialWait, .waits(1), .awaitingCredential(replay: false)),
        Row(.backingOff, .claim, .finish, .finished(done(.executing))),

        // pausing
        Row(.pausing, .cancel, .finish, .paused(announced: false)),
        Row(.pausing, .pause, .stop(task: false), .paused(announced: false)),
        Row(.pausing, .moveToPaused, .acted, .paused(announced: true)),
        Row(.pausing, .taskStarted, .cancelTask, .paused(announced: false)),
        Row(.pausing, .staleTask, .cancelTask, .paused(announced: false)),
        Row(.pausing, .attemptFailed, .askRetryPolicy(attemptCount: 1), .paused(announced: false)),
        Row(.pausing, .claim, .finish, .finished(done(.executing))),

        // paused
        Row(.paused, .cancel, .finish, .paused(announced: true)),
        Row(.paused, .moveToReady, .acted, .idle(i(started: true, enqueued: true))),
        Row(.paused, .taskStarted, .cancelTask, .paused(announced: true)),
        Row(.paused, .staleTask, .cancelTask, .paused(announced: true)),
        Row(.paused, .attemptFailed, .finish, .paused(announced: true)),
        Row(.paused, .claim, .finish, .finished(done(.paused))),

        // resumed
        Row(.resumed, .pause, .pauseWaiting, .idle(i(started: true, enqueued: true))),
        Row(.resumed, .moveToExecuting, .acted, .preparing),
        Row(.resumed, .moveToPaused, .acted, .pausedBeforeStart(i(started: true, enqueued: true))),
        Row(.resumed, .taskStarted, .cancelTask, .idle(i(started: true, enqueued: true))),
        Row(.resumed, .staleTask, .cancelTask, .idle(i(started: true, enqueued: true))),
        Row(.resumed, .attemptFailed, .finish, .idle(i(started: true, enqueued: true))),
        Row(.resumed, .claim, .finish, .finished(done(.ready))),

        // finishing
        Row(.finishing, .moveToPaused, .acted, .finished(done(.paused))),
        Row(.finishing, .moveToFinished, .acted, .finished(done(.finished))),
        Row(.finishing, .taskStarted, .cancelTask, .finished(done(.executing))),
        Row(.finishing, .staleTask, .cancelTask, .finished(done(.executing))),

        // finished
        Row(.finished, .taskStarted, .cancelTask, .finished(done(.finished))),
        Row(.finished, .staleTask, .cancelTask, .finished(done(.finished))),
    ]

    /// The bookkeeping events: `.acted` when the machine answered or changed its state or a
    /// counter, a file, a credential, the metrics.
    static let bookkeeping: [BookRow] = [
        // idle
        BookRow(.idle, .backpressure, .acted, .idle(i())),
        BookRow(.idle, .redirect, .acted, .idle(i())),
        BookRow(.idle, .preflightFailed, .acted, .idle(i())),
        BookRow(.idle, .continueSaved, .acted, .idle(i())),
        BookRow(.idle, .progress, .acted, .idle(i())),
        BookRow(.idle, .whenCompletionRuns, .acted, .idle(i())),
        BookRow(.idle, .firstRun, .acted, .idle(i())),
        BookRow(.idle, .pinSecrets, .acted, .idle(i())),

        // enqueued
        BookRow(.enqueued, .backpressure, .acted, .idle(i(enqueued: true))),
        BookRow(.enqueued, .redirect, .acted, .idle(i(enqueued: true))),
        BookRow(.enqueued, .preflightFailed, .acted, .idle(i(enqueued: true))),
        BookRow(.enqueued, .continueSaved, .acted, .idle(i(enqueued: true))),
        BookRow(.enqueued, .progress, .acted, .idle(i(enqueued: true))),
        BookRow(.enqueued, .whenCompletionRuns, .acted, .idle(i(enqueued: true))),
        BookRow(.enqueued, .firstRun, .acted, .idle(i(enqueued: true))),
        BookRow(.enqueued, .pinSecrets, .acted, .idle(i(enqueued: true))),

        // pausedBeforeStart
        BookRow(.pausedBeforeStart, .backpressure, .acted, .pausedBeforeStart(i())),
        BookRow(.pausedBeforeStart, .redirect, .acted, .pausedBeforeStart(i())),
        BookRow(.pausedBeforeStart, .preflightFailed, .acted, .pausedBeforeStart(i())),
        BookRow(.pausedBeforeStart, .continueSaved, .acted, .pausedBeforeStart(i())),
        BookRow(.pausedBeforeStart, .progress, .acted, .pausedBeforeStart(i())),
        BookRow(.pausedBeforeStart, .whenCompletionRuns, .acted, .pausedBeforeStart(i())),
        BookRow(.pausedBeforeStart, .firstRun, .acted, .pausedBeforeStart(i())),
        BookRow(.pausedBeforeStart, .pinSecrets, .acted, .pausedBeforeStart(i())),

        // startedWhilePaused
        BookRow(.startedWhilePaused, .backpressure, .acted, .pausedBeforeStart(i(started: true))),
        BookRow(.startedWhilePaused, .redirect, .acted, .pausedBeforeStart(i(started: true))),
        BookRow(.startedWhilePaused, .progress, .acted, .pausedBeforeStart(i(started: true))),
        BookRow(.startedWhilePaused, .whenCompletionRuns, .acted, .pausedBeforeStart(i(started: true))),
        BookRow(.startedWhilePaused, .firstRun, .acted, .pausedBeforeStart(i(started: true))),
        BookRow(.startedWhilePaused, .pinSecrets, .acted, .pausedBeforeStart(i(started: true))),

        // preparing
        BookRow(.preparing, .backpressure, .acted, .preparing),
        BookRow(.preparing, .redirect, .acted, .preparing),
        BookRow(.preparing, .keptBytesLost, .acted, .preparing),
        BookRow(.preparing, .progress, .acted, .preparing),
        BookRow(.preparing, .whenCompletionRuns, .acted, .preparing),
        BookRow(.preparing, .timersArmed, .acted, .preparing),
        BookRow(.preparing, .pinSecrets, .acted, .preparing),

        // awaitingCredential
        BookRow(.awaitingCredential, .backpressure, .acted, .awaitingCredential(replay: false)),
        BookRow(.awaitingCredential, .redirect, .acted, .awaitingCredential(replay: false)),
        BookRow(.awaitingCredential, .keptBytesLost, .acted, .awaitingCredential(replay: false)),
        BookRow(.awaitingCredential, .progress, .acted, .awaitingCredential(replay: false)),
        BookRow(.awaitingCredential, .whenCompletionRuns, .acted, .awaitingCredential(replay: false)),
        BookRow(.awaitingCredential, .timersArmed, .acted, .awaitingCredential(replay: false)),
        BookRow(.awaitingCredential, .pinSecrets, .acted, .awaitingCredential(replay: false)),

        // adapting
        BookRow(.adapting, .backpressure, .acted, .adapting(f(1))),
        BookRow(.adapting, .pauseReceiving, .acted, .adapting(f(1, .pauseWhenTaskStarts))),
        BookRow(.adapting, .redirect, .acted, .adapting(f(1))),
        BookRow(.adapting, .keptBytesLost, .acted, .adapting(f(1))),
        BookRow(.adapting, .progress, .acted, .adapting(f(1))),
        BookRow(.adapting, .whenCompletionRuns, .acted, .adapting(f(1))),
        BookRow(.adapting, .timersArmed, .acted, .adapting(f(1))),
        BookRow(.adapting, .pinSecrets, .acted, .adapting(f(1))),

        // connecting
        BookRow(.connecting, .backpressure, .acted, .connecting(f(1))),
        BookRow(.connecting, .pauseReceiving, .acted, .connecting(f(1, .pauseWhenTaskStarts))),
        BookRow(.connecting, .redirect, .acted, .connecting(f(1))),
        BookRow(.connecting, .keptBytesLost, .acted, .connecting(f(1))),
        BookRow(.connecting, .awaitsConnection, .acted, .connecting(f(1, waits: true))),
        BookRow(.connecting, .metrics, .acted, .connecting(f(1))),
        BookRow(.connecting, .source, .acted, .connecting(f(1))),
        BookRow(.connecting, .progress, .acted, .connecting(f(1))),
        BookRow(.connecting, .whenCompletionRuns, .acted, .connecting(f(1))),
        BookRow(.connecting, .timersArmed, .acted, .connecting(f(1))),
        BookRow(.connecting, .pinSecrets, .acted, .connecting(f(1))),

        // connectingWithTask
        BookRow(.connectingWithTask, .backpressure, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .pauseReceiving, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .resumeReceiving, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .redirect, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .keptBytesLost, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .awaitsConnection, .acted, .connecting(f(1, waits: true))),
        BookRow(.connectingWithTask, .metrics, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .source, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .progress, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .whenCompletionRuns, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .timersArmed, .acted, .connecting(f(1))),
        BookRow(.connectingWithTask, .pinSecrets, .acted, .connecting(f(1))),

        // receiving
        BookRow(.receiving, .routeBody, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .backpressure, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .pauseReceiving, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .resumeReceiving, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .redirect, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .keptBytesLost, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .awaitsConnection, .acted, .receiving(f(1, waits: true), .deliver)),
        BookRow(.receiving, .metrics, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .source, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .progress, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .whenCompletionRuns, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .timersArmed, .acted, .receiving(f(1), .deliver)),
        BookRow(.receiving, .pinSecrets, .acted, .receiving(f(1), .deliver)),

        // following
        BookRow(.following, .routeBody, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .backpressure, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .pauseReceiving, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .resumeReceiving, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .redirect, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .keptBytesLost, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .awaitsConnection, .acted, .receiving(f(1, waits: true), .follow)),
        BookRow(.following, .metrics, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .source, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .progress, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .whenCompletionRuns, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .timersArmed, .acted, .receiving(f(1), .follow)),
        BookRow(.following, .pinSecrets, .acted, .receiving(f(1), .follow)),

        // deciding
        BookRow(.deciding, .backpressure, .acted, .retrying(.deciding)),
        BookRow(.deciding, .redirect, .acted, .retrying(.deciding)),
        BookRow(.deciding, .keptBytesLost, .acted, .retrying(.deciding)),
        BookRow(.deciding, .progress, .acted, .retrying(.deciding)),
        BookRow(.deciding, .whenCompletionRuns, .acted, .retrying(.deciding)),
        BookRow(.deciding, .timersArmed, .acted, .retrying(.deciding)),
        BookRow(.deciding, .pinSecrets, .acted, .retrying(.deciding)),

        // backingOff
        BookRow(.backingOff, .backpressure, .acted, .retrying(.backingOff)),
        BookRow(.backingOff, .redirect, .acted, .retrying(.backingOff)),
        BookRow(.backingOff, .keptBytesLost, .acted, .retrying(.backingOff)),
        BookRow(.backingOff, .progress, .acted, .retrying(.backingOff)),
        BookRow(.backingOff, .whenCompletionRuns, .acted, .retrying(.backingOff)),
        BookRow(.backingOff, .retryTimerArmed, .acted, .retrying(.backingOff)),
        BookRow(.backingOff, .timersArmed, .acted, .retrying(.backingOff)),
        BookRow(.backingOff, .pinSecrets, .acted, .retrying(.backingOff)),

        // pausing
        BookRow(.pausing, .backpressure, .acted, .paused(announced: false)),
        BookRow(.pausing, .redirect, .acted, .paused(announced: false)),
        BookRow(.pausing, .keptBytesLost, .acted, .paused(announced: false)),
        BookRow(.pausing, .progress, .acted, .paused(announced: false)),
        BookRow(.pausing, .whenCompletionRuns, .acted, .paused(announced: false)),
        BookRow(.pausing, .pinSecrets, .acted, .paused(announced: false)),

        // paused
        BookRow(.paused, .backpressure, .acted, .paused(announced: true)),
        BookRow(.paused, .redirect, .acted, .paused(announced: true)),
        BookRow(.paused, .keptBytesLost, .acted, .paused(announced: true)),
        BookRow(.paused, .progress, .acted, .paused(announced: true)),
        BookRow(.paused, .whenCompletionRuns, .acted, .paused(announced: true)),
        BookRow(.paused, .pinSecrets, .acted, .paused(announced: true)),

        // resumed
        BookRow(.resumed, .backpressure, .acted, .idle(i(started: true, enqueued: true))),
        BookRow(.resumed, .redirect, .acted, .idle(i(started: true, enqueued: true))),
        BookRow(.resumed, .keptBytesLost, .acted, .idle(i(started: true, enqueued: true))),
        BookRow(.resumed, .progress, .acted, .idle(i(started: true, enqueued: true))),
        BookRow(.resumed, .whenCompletionRuns, .acted, .idle(i(started: true, enqueued: true))),
        BookRow(.resumed, .pinSecrets, .acted, .idle(i(started: true, enqueued: true))),

        // finishing
        BookRow(.finishing, .progress, .acted, .finished(done(.executing))),
        BookRow(.finishing, .completionRan, .acted, .finished(done(.executing, ran: true))),
        BookRow(.finishing, .whenCompletionRuns, .acted, .finished(done(.executing))),
        BookRow(.finishing, .monitorsHeardFinish, .acted, .finished(done(.executing, heard: true))),

        // finished
        BookRow(.finished, .progress, .acted, .finished(done(.finished))),
        BookRow(.finished, .completionRan, .acted, .finished(done(.finished, ran: true))),
        BookRow(.finished, .whenCompletionRuns, .acted, .finished(done(.finished))),
        BookRow(.finished, .monitorsHeardFinish, .acted, .finished(done(.finished, heard: true))),
    ]
}

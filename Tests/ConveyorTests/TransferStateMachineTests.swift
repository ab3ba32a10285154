import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The operation's state machine alone, without sockets: every event in every state. The
/// socket suites (`OperationLifecycleTests`, `PauseResumeTests`, `RetryTests`, …) show the
/// operation acts on what the machine decides; these show what it decides.
@Suite("The transfer state machine, event by event")
struct TransferStateMachineTests {
    /// A task that only says who it is.
    struct FakeTask: TransportTask {
        let id: Int
        func cancel() {}
        func pauseReceiving() {}
        func resumeReceiving() {}
    }

    static let url = URL(string: "http://127.0.0.1:1/file")!
    static func head(_ status: Int, _ headers: [String: String] = [:]) -> HTTPResponseHead {
        HTTPResponseHead(url: url, statusCode: status, headers: HTTPHeaders(headers))
    }
    static let now = DispatchTime.now()

    /// The states an operation passes through, each made by the events that lead to it.
    enum Fixture: String, CaseIterable, CustomStringConvertible {
        case waiting, enqueued, pausedBeforeStart, executingWithoutTask, executingWithTask, receiving, betweenAttempts, paused
        case finished

        var description: String { rawValue }

        func make() -> TransferStateMachine {
            var machine = TransferStateMachine(request: URLRequest(url: TransferStateMachineTests.url))
            switch self {
            case .waiting: return machine
            case .enqueued:
                _ = machine.enqueue()
                return machine
            case .pausedBeforeStart:
                guard case .pauseWaiting = machine.pause() else {
                    Issue.record("pause of a waiting operation")
                    return machine
                }
                machine.moved(to: .paused)
                return machine
            default: break
            }
            guard case .execute = machine.start(isCancelled: false, now: TransferStateMachineTests.now, date: Date()) else {
                Issue.record("start")
                return machine
            }
            machine.moved(to: .executing)
            // As the operation does: the idle timer is armed before the first attempt.
            _ = machine.timersArmed(
                idle: DeadlineScheduler.shared.schedule(after: 3600) {}, resource: nil, now: TransferStateMachineTests.now)
            let attempt = machine.attemptBegins(machine.currentRequest, now: TransferStateMachineTests.now)!.number
            if self == .executingWithoutTask { return machine }
            _ = machine.taskStarted(FakeTask(id: attempt), attempt: attempt)
            if self == .executingWithTask { return machine }
            let head = TransferStateMachineTests.head(200, ["ETag": "\"v1\"", "Content-Length": "10"])
            guard case .accept = machine.headArrived(head, attempt: attempt, now: TransferStateMachineTests.now) else {
                Issue.record("head")
                return machine
            }
            _ = machine.bodyRouted(to: nil, streams: false, attempt: attempt)
            _ = machine.headDelivered(head, redirect: nil)
            _ = machine.chunkArrived(Data("hello".utf8), attempt: attempt, limit: nil, now: TransferStateMachineTests.now)
            switch self {
            case .receiving: return machine
            case .betweenAttempts:
                _ = machine.attemptFailed(retryable: true, cancelled: false, maximumAttempts: 3)
                _ = machine.retryScheduled(request: nil)
            case .paused:
                _ = machine.pause()
                machine.moved(to: .paused)
            case .finished:
                _ = machine.claimCompletion(.failure(.cancelled(reason: .explicit)), now: TransferStateMachineTests.now)
                machine.moved(to: .finished)
            default: break
            }
            return machine
        }
    }

    /// Every event, applied to a machine; the answer says whether the machine acted on it.
    enum Event: String, CaseIterable, CustomStringConvertible {
        case enqueue, start, cancel, pause, beginAttempt, staleTask, staleHead, head, chunk, bytesSent, wantsPause
        case idleTimer, retryTimer, attemptFailed, retryScheduled, replay, claim, armTimers, pinSecrets, awaitConnection

        var description: String { rawValue }

        /// Applies the event; true when the machine acted (changed something or asked for an action).
        func apply(to machine: inout TransferStateMachine) -> Bool {
            let attempt = machine.attempt
            let now = TransferStateMachineTests.now
            switch self {
            case .enqueue: return machine.enqueue()
            case .start:
                if case .none = machine.start(isCancelled: false, now: now, date: Date()) { return false }
                return true
            case .cancel:
                machine.cancelRequested(.explicit)
                if case .none = machine.cancelled() { return false }
                return true
            case .pause:
                if case .none = machine.pause() { return false }
                return true
            case .beginAttempt: return machine.attemptBegins(machine.currentRequest, now: now) != nil
            case .staleTask:
                if case .cancel = machine.taskStarted(FakeTask(id: -1), attempt: attempt - 1) { return false }
                return true
            case .staleHead:
                if case .ignore = machine.headArrived(TransferStateMachineTests.head(200), attempt: attempt - 1, now: now) { return false }
                return true
            case .head:
                if case .ignore = machine.headArrived(TransferStateMachineTests.head(200), attempt: attempt, now: now) { return false }
                return true
            case .chunk:
                if case .ignore = machine.chunkArrived(Data("x".utf8), attempt: attempt, limit: nil, now: now) { return false }
                return true
            case .bytesSent: return machine.bytesSent(1, expected: 1, attempt: attempt, now: now)
            case .wantsPause:
                _ = machine.pauseReceiving()
                return machine.transportWantsPause(attempt: attempt)
            case .idleTimer:
                if case .none = machine.idleTimerFired(interval: 60, now: now) { return false }
                return true
            case .retryTimer: return machine.retryTimerFired() != nil
            case .attemptFailed: return machine.attemptFailed(retryable: true, cancelled: false, maximumAttempts: 5) != nil
            case .retryScheduled: return machine.retryScheduled(request: nil) != nil
            case .replay: return machine.mayReplay(attempt: attempt) && machine.replayBegins(attempt: attempt) != nil
            case .claim: return machine.claimCompletion(.success(OneWayTransfer(nil)), now: now) != nil
            case .pinSecrets: return machine.secretsPinned(["secret-value"])
            case .awaitConnection:
                // Waiting for a connection turns an expiring idle timer into a rescheduled one.
                machine.awaitsConnection(attempt: attempt)
                let late = DispatchTime(uptimeNanoseconds: now.uptimeNanoseconds + 120_000_000_000)
                if case .reschedule = machine.idleTimerFired(interval: 60, now: late), machine.task != nil { return true }
                return false
            case .armTimers:
                let timer = DeadlineScheduler.shared.schedule(after: 3600) {}
                let cancelled = machine.timersArmed(idle: timer, resource: nil, now: now)
                timer.cancel()
                return !cancelled.contains { $0 === timer }
            }
        }
    }

    /// What each state does with each event: the events it acts on (every other one is dropped).
    static let acts: [Fixture: Set<Event>] = [
        .waiting: [.enqueue, .start, .pause, .claim, .pinSecrets],
        .enqueued: [.start, .pause, .claim, .pinSecrets],
        // `resume()` moves it to ready for its queue; the lifecycle alone changes.
        .pausedBeforeStart: [.enqueue, .cancel, .claim, .pinSecrets],
        .executingWithoutTask: [
            .cancel, .pause, .beginAttempt, .head, .chunk, .bytesSent, .wantsPause, .idleTimer, .retryTimer, .attemptFailed,
            .retryScheduled, .claim, .armTimers, .pinSecrets,
        ],
        .executingWithTask: [
            .cancel, .pause, .beginAttempt, .head, .chunk, .bytesSent, .idleTimer, .retryTimer, .attemptFailed, .retryScheduled,
            .claim, .armTimers, .pinSecrets, .awaitConnection,
        ],
        .receiving: [
            .cancel, .pause, .beginAttempt, .head, .chunk, .bytesSent, .idleTimer, .retryTimer, .attemptFailed, .retryScheduled,
            .claim, .armTimers, .pinSecrets, .awaitConnection,
        ],
        // Waiting for the back-off: the failed attempt's clocks are stopped (no idle timer), and
        // the attempt number it left carries no task, so no transport event can match it.
        .betweenAttempts: [
            .cancel, .pause, .beginAttempt, .head, .chunk, .bytesSent, .wantsPause, .retryTimer, .attemptFailed, .retryScheduled,
            .claim, .armTimers, .pinSecrets,
        ],
        .paused: [.cancel, .claim, .pinSecrets],
        .finished: [],
    ]

    @Test("Every event in every state: acted on or dropped as the table says", arguments: Fixture.allCases)
    func everyEventInEveryState(_ fixture: Fixture) {
        for event in Event.allCases {
            var machine = fixture.make()
            let acted = event.apply(to: &machine)
            // `replay` acts only for an attempt that carried a stamped credential: none here
            // (see `replayOnce`).
            let expected = Self.acts[fixture]!.contains(event)
            #expect(acted == expected, "\(event) in \(fixture)")
        }
    }

    @Test("The idle timer expires only a silent running transfer: one with a task and no connection wait")
    func idleTimer() {
        var machine = Fixture.executingWithTask.make()
        let timer = DeadlineScheduler.shared.schedule(after: 3600) {}
        defer { timer.cancel() }
        // The timer it replaces (the fixture's) is handed back to be cancelled.
        let replaced = machine.timersArmed(idle: timer, resource: nil, now: Self.now)
        #expect(replaced.count == 1 && replaced[0] !== timer)
        let later = DispatchTime(uptimeNanoseconds: Self.now.uptimeNanoseconds + 61_000_000_000)
        guard case .expire = machine.idleTimerFired(interval: 60, now: later) else {
            Issue.record("a silent transfer past its idle timeout expires")
            return
        }
        guard case .reschedule(_, let after) = machine.idleTimerFired(interval: 60, now: Self.now), after >= 59 else {
            Issue.record("a transfer that just moved reschedules for the rest")
            return
        }
        machine.awaitsConnection(attempt: machine.attempt)
        guard case .reschedule = machine.idleTimerFired(interval: 60, now: later) else {
            Issue.record("waiting for a connection is not idleness")
            return
        }
        // An activity stamp later than the clock reading (another thread) is no idleness, not a wrap-around.
        machine.leftConnectionQueue(attempt: machine.attempt, now: later)
        guard case .reschedule = machine.idleTimerFired(interval: 60, now: Self.now) else {
            Issue.record("an activity after the reading counts as none idle")
            return
        }
    }

    @Test("A cancel in any state ends in exactly one completion", arguments: Fixture.allCases)
    func cancelEndsOnce(_ fixture: Fixture) {
        var machine = fixture.make()
        var completions = fixture == .finished ? 1 : 0
        func claim() {
            if machine.claimCompletion(.failure(.cancelled(reason: .explicit)), now: Self.now) != nil { completions += 1 }
        }
        machine.cancelRequested(.shuttingDown)
        switch machine.cancelled() {
        case .finish: claim()
        case .returnToReady:
            machine.moved(to: .ready)
            if machine.hasStarted { claim() }
        case .none: break
        }
        // The queue starts a cancelled operation that is still waiting: it finishes at once.
        if case .finish(let error) = machine.start(isCancelled: true, now: Self.now, date: Date()) {
            #expect(error.isCancelled)
            claim()
        }
        // Late events: a transport completion, a timeout, a second cancel.
        claim()
        claim()
        #expect(completions == 1, "\(fixture)")
        #expect(machine.isFinishing)
        if fixture != .finished { #expect(machine.cancellationReason == .shuttingDown) }
    }

    @Test("A pause asked for before the task exists is applied when it is stored, and lifted when the consumer caught up")
    func pauseBeforeTask() {
        var machine = Fixture.executingWithoutTask.make()
        let attempt = machine.attempt
        #expect(machine.pauseReceiving() == nil)
        #expect(machine.taskStarted(FakeTask(id: 1), attempt: attempt) == .pause)

        var caughtUp = Fixture.executingWithoutTask.make()
        _ = caughtUp.pauseReceiving()
        let pausedItself = caughtUp.transportWantsPause(attempt: caughtUp.attempt)
        #expect(pausedItself)
        #expect(caughtUp.resumeReceiving() == nil)
        #expect(caughtUp.taskStarted(FakeTask(id: 1), attempt: caughtUp.attempt) == .resume)
    }

    @Test("After a pause no attempt starts, even from a retry whose timer fires before the lifecycle moved")
    func pauseStopsRetry() {
        var machine = Fixture.betweenAttempts.make()
        guard case .stop(let halt) = machine.pause() else {
            Issue.record("a transfer between attempts stops")
            return
        }
        #expect(halt.task == nil)
        #expect(machine.retryTimerFired() == nil)
        #expect(machine.attemptBegins(machine.currentRequest, now: Self.now) == nil)
        machine.moved(to: .paused)
        machine.moved(to: .ready)
        machine.moved(to: .executing)
        #expect(machine.attemptBegins(machine.currentRequest, now: Self.now) != nil)
    }

    @Test("Pause and retry keep the received bytes under one rule: a GET's 200 with a strong validator")
    func resumePoint() {
        var paused = Fixture.receiving.make()
        _ = paused.pause()
        paused.moved(to: .paused)
        #expect(paused.resumePoint == nil)  // no body file: the bytes are in memory, nothing to save
        paused.moved(to: .ready)
        paused.moved(to: .executing)
        let resumed = paused.attemptBegins(paused.currentRequest, now: Self.now)
        #expect(resumed?.resumeOffset == 5)
        #expect(resumed?.resumeValidator == "\"v1\"")

        var retried = Fixture.betweenAttempts.make()
        let retry = retried.retryTimerFired()
        #expect(retry != nil)
        let attempt = retried.attemptBegins(retry!, now: Self.now)
        #expect(attempt?.resumeOffset == 5)
        #expect(attempt?.resumeValidator == "\"v1\"")

        // A weak ETag is not a validator If-Range accepts; a POST is not continued.
        var weak = TransferStateMachine(request: URLRequest(url: Self.url))
        _ = weak.start(isCancelled: false, now: Self.now, date: Date())
        weak.moved(to: .executing)
        let number = weak.attemptBegins(weak.currentRequest, now: Self.now)!.number
        _ = weak.headArrived(Self.head(200, ["ETag": "W/\"v1\""]), attempt: number, now: Self.now)
        _ = weak.chunkArrived(Data("abc".utf8), attempt: number, limit: nil, now: Self.now)
        _ = weak.pause()
        weak.moved(to: .paused)
        weak.moved(to: .ready)
        weak.moved(to: .executing)
        #expect(weak.attemptBegins(weak.currentRequest, now: Self.now)?.resumeOffset == 0)
    }

    @Test("A ranged answer that does not continue the kept bytes restarts the request; one that does is appended")
    func rangedAnswers() {
        func resumed() -> TransferStateMachine {
            var machine = Fixture.betweenAttempts.make()
            _ = machine.attemptBegins(machine.retryTimerFired()!, now: Self.now)
            return machine
        }
        var other = resumed()
        let wrongStart = Self.head(206, ["Content-Range": "bytes 0-9/10", "ETag": "\"v1\""])
        guard case .restart(_, _, let request) = other.headArrived(wrongStart, attempt: other.attempt, now: Self.now) else {
            Issue.record("a 206 from the start restarts")
            return
        }
        #expect(other.attemptBegins(request, now: Self.now)?.resumeOffset == 0)

        var changed = resumed()
        let otherTag = Self.head(206, ["Content-Range": "bytes 5-9/10", "ETag": "\"v2\"", "Content-Length": "5"])
        guard case .restart = changed.headArrived(otherTag, attempt: changed.attempt, now: Self.now) else {
            Issue.record("a 206 under another validator restarts")
            return
        }

        var continued = resumed()
        let rest = Self.head(206, ["Content-Range": "bytes 5-9/10", "ETag": "\"v1\"", "Content-Length": "5"])
        guard case .accept(_, let keep) = continued.headArrived(rest, attempt: continued.attempt, now: Self.now) else {
            Issue.record("a 206 that continues is accepted")
            return
        }
        #expect(keep)
        #expect(continued.bytesReceived == 5)
        #expect(continued.data == Data("hello".utf8))
    }

    @Test("Timers made after the operation stopped are handed back to be cancelled")
    func lateTimers() {
        for fixture in [Fixture.finished, .paused, .pausedBeforeStart, .waiting] {
            var machine = fixture.make()
            let timer = DeadlineScheduler.shared.schedule(after: 3600) {}
            #expect(machine.timersArmed(idle: timer, resource: nil, now: Self.now).count == 1, "\(fixture)")
            timer.cancel()
            let retry = DeadlineScheduler.shared.schedule(after: 3600) {}
            let armed = machine.retryTimerArmed(retry)
            #expect(!armed, "\(fixture)")
            retry.cancel()
        }
    }

    @Test("A memory body past its limit releases what it held; the counters and metrics follow the final response")
    func bodyLimitAndMetrics() {
        var machine = Fixture.receiving.make()
        guard case .tooLarge(let limit, _) = machine.chunkArrived(Data(count: 10), attempt: machine.attempt, limit: 8, now: Self.now)
        else {
            Issue.record("past the limit")
            return
        }
        #expect(limit == 8)
        #expect(machine.data.isEmpty)
        var finished = Fixture.receiving.make()
        _ = finished.bytesSent(7, expected: 7, attempt: finished.attempt, now: Self.now)
        _ = finished.claimCompletion(.success(OneWayTransfer(nil)), now: Self.now)
        #expect(finished.metrics?.bytesReceived == 5)
        #expect(finished.metrics?.bytesSent == 7)
        #expect(finished.metrics?.attemptCount == 1)
    }

    @Test("A refused credential is replayed once per operation, and only for the attempt that carried it")
    func replayOnce() {
        var machine = Fixture.executingWithTask.make()
        let attempt = machine.attempt
        machine.credentialApplied("token-1")
        #expect(machine.mayReplay(attempt: attempt))
        #expect(!machine.mayReplay(attempt: attempt - 1))
        let replay = machine.replayBegins(attempt: attempt)
        #expect(replay?.credentialID == "token-1")
        #expect((replay?.task as? FakeTask)?.id == attempt)
        #expect(machine.retryCount == 0)
        let next = machine.attemptBegins(machine.currentRequest, now: Self.now)!.number
        #expect(!machine.mayReplay(attempt: next))
        #expect(machine.credentialWaitBegins() == 1)
        #expect(machine.credentialWaitBegins() == 2)
        machine.credentialApplied("token-2")
        #expect(machine.credentialWaitBegins() == 1)
    }

    @Test("A waiting operation has no record; enqueueing twice or after a start is refused")
    func waiting() {
        var machine = TransferStateMachine(request: URLRequest(url: Self.url))
        #expect(!machine.hasRecord)
        _ = machine.attempt
        _ = machine.data
        #expect(!machine.hasRecord)
        let first = machine.enqueue()
        let second = machine.enqueue()
        #expect(first && !second)
        var started = TransferStateMachine(request: URLRequest(url: Self.url))
        _ = started.start(isCancelled: false, now: Self.now, date: Date())
        let afterStart = started.enqueue()
        #expect(!afterStart)
    }
}

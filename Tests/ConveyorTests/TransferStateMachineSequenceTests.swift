import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The machine over several events: what one table row cannot show (a clock that moves, a
/// pause asked for before the task exists, a resume point carried into the next attempt).
@Suite("The transfer state machine, over several events")
struct TransferStateMachineSequenceTests {
    typealias Fixture = TransferStateMachineTests.Fixture
    typealias FakeTask = TransferStateMachineTests.FakeTask
    static var now: DispatchTime { TransferStateMachineTests.now }
    static func head(_ status: Int, _ headers: [String: String] = [:]) -> HTTPResponseHead {
        TransferStateMachineTests.head(status, headers)
    }

    @Test("The idle timer expires only a silent running transfer: one with a task and no connection wait")
    func idleTimer() {
        var clock = TransferStateMachineTests.FakeClock()
        var machine = Fixture.connectingWithTask.make()
        let timer = TransferStateMachineTests.parkedTimer()
        defer { timer.cancel() }
        // The timer it replaces (the fixture's) is handed back to be cancelled.
        let replaced = machine.timersArmed(idle: timer, resource: nil, now: clock.now)
        #expect(replaced.count == 1 && replaced[0] !== timer)
        clock.advance(by: 61)
        #expect(machine.idleTimerFired(interval: 60, now: clock.now).expires, "a silent transfer past its idle timeout expires")
        guard case .reschedule(_, let after) = machine.idleTimerFired(interval: 60, now: Self.now), after >= 59 else {
            Issue.record("a transfer that just moved reschedules for the rest")
            return
        }
        machine.awaitsConnection(attempt: machine.attempt)
        #expect(machine.inFlight?.waitsForConnection == true)
        #expect(!machine.idleTimerFired(interval: 60, now: clock.now).expires, "waiting for a connection is not idleness")
        // An activity stamp later than the clock reading (another thread) is no idleness, not a wrap-around.
        machine.leftConnectionQueue(attempt: machine.attempt, now: clock.now)
        #expect(machine.inFlight?.waitsForConnection == false)
        #expect(!machine.idleTimerFired(interval: 60, now: Self.now).expires, "an activity after the reading counts as none idle")
        // The adapters are the caller's code: their time is the transfer's silence.
        let adapting = Fixture.adapting.make()
        #expect(adapting.idleTimerFired(interval: 60, now: clock.now).expires)
    }

    @Test("A cancel in any state ends in exactly one completion", arguments: Fixture.allCases)
    func cancelEndsOnce(_ fixture: Fixture) {
        var machine = fixture.make()
        var completions = fixture.state.isFinished ? 1 : 0
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
        if !fixture.state.isFinished { #expect(machine.cancellationReason == .shuttingDown) }
    }

    @Test("A pause asked for before the task exists is applied when it is stored, and lifted when the consumer caught up")
    func pauseBeforeTask() {
        var machine = Fixture.connecting.make()
        let attempt = machine.attempt
        #expect(machine.pauseReceiving() == nil)
        #expect(machine.inFlight?.demand == .pauseWhenTaskStarts)
        #expect(machine.taskStarted(FakeTask(id: 1), attempt: attempt) == .pause)
        #expect(machine.inFlight?.demand == .flowing)

        var caughtUp = Fixture.connecting.make()
        _ = caughtUp.pauseReceiving()
        let pausedItself = caughtUp.transportWantsPause(attempt: caughtUp.attempt)
        #expect(pausedItself)
        #expect(caughtUp.inFlight?.demand == .pausedBeforeTask(caughtUp: false))
        #expect(caughtUp.resumeReceiving() == nil)
        #expect(caughtUp.inFlight?.demand == .pausedBeforeTask(caughtUp: true))
        #expect(caughtUp.taskStarted(FakeTask(id: 1), attempt: caughtUp.attempt) == .resume)
    }

    @Test("After a pause no attempt starts, even from a retry whose timer fires before the lifecycle moved")
    func pauseStopsRetry() {
        var machine = Fixture.backingOff.make()
        guard case .stop(let halt) = machine.pause() else {
            Issue.record("a transfer between attempts stops")
            return
        }
        #expect(halt.task == nil)
        #expect(machine.retryTimerFired().request == nil)
        #expect(machine.attemptBegins(machine.currentRequest, now: Self.now) == nil)
        machine.moved(to: .paused)
        machine.moved(to: .ready)
        machine.moved(to: .executing)
        #expect(machine.state == .preparing)
        #expect(machine.attemptBegins(machine.currentRequest, now: Self.now) != nil)
    }

    @Test("A retry's back-off that fires after a pause and a resume sends nothing: the resumed run has its own attempt")
    func staleBackOffAfterResume() {
        var machine = Fixture.backingOff.make()
        _ = machine.pause()
        machine.moved(to: .paused)
        machine.moved(to: .ready)
        machine.moved(to: .executing)
        let resumed = machine.attemptBegins(machine.currentRequest, now: Self.now)?.number
        // The back-off timer was cancelled by the pause, but its fire may already be on its way.
        #expect(machine.retryTimerFired().request == nil)
        #expect(machine.state == .connecting(.init(number: resumed ?? -1)))
        // So may the policy's answer to the failure before the pause.
        guard case .none = machine.retryScheduled(request: nil) else {
            Issue.record("a decision about an attempt before the pause schedules no second one")
            return
        }
        #expect(machine.retryCount == 1)
    }

    @Test("Pause and retry keep the received bytes under one rule: a GET's 200 with a strong validator")
    func resumePoint() {
        var paused = Fixture.paused.make()
        #expect(paused.resumePoint == nil)  // no body file: the bytes are in memory, nothing to save
        paused.moved(to: .ready)
        paused.moved(to: .executing)
        let resumed = paused.attemptBegins(paused.currentRequest, now: Self.now)
        #expect(resumed?.resumeOffset == 5)
        #expect(resumed?.resumeValidator == "\"v1\"")

        var retried = Fixture.backingOff.make()
        let retry = retried.retryTimerFired().request
        #expect(retry != nil)
        let attempt = retried.attemptBegins(retry!, now: Self.now)
        #expect(attempt?.resumeOffset == 5)
        #expect(attempt?.resumeValidator == "\"v1\"")

        // A weak ETag is not a validator If-Range accepts.
        var weak = Fixture.preparing.make()
        let number = weak.attemptBegins(weak.currentRequest, now: Self.now)!.number
        _ = weak.headArrived(Self.head(200, ["ETag": "W/\"v1\""]), attempt: number, now: Self.now)
        _ = weak.bodyRouted(to: nil, streams: false, attempt: number)
        _ = weak.headDelivered(Self.head(200, ["ETag": "W/\"v1\""]), redirect: nil)
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
            var machine = Fixture.backingOff.make()
            _ = machine.attemptBegins(machine.retryTimerFired().request!, now: Self.now)
            return machine
        }
        var other = resumed()
        let wrongStart = Self.head(206, ["Content-Range": "bytes 0-9/10", "ETag": "\"v1\""])
        guard case .restart(_, _, let request) = other.headArrived(wrongStart, attempt: other.attempt, now: Self.now) else {
            Issue.record("a 206 from the start restarts")
            return
        }
        #expect(other.state == .preparing)
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
        #expect(continued.state == .receiving(.init(number: continued.attempt), .undecided))
        #expect(continued.bytesReceived == 5)
        #expect(continued.data == Data("hello".utf8))
    }

    @Test("Timers made after the operation stopped are handed back to be cancelled")
    func lateTimers() {
        for fixture in [Fixture.finished, .paused, .pausedBeforeStart, .idle] {
            var machine = fixture.make()
            let timer = TransferStateMachineTests.parkedTimer()
            #expect(machine.timersArmed(idle: timer, resource: nil, now: Self.now).count == 1, "\(fixture)")
            timer.cancel()
            let retry = TransferStateMachineTests.parkedTimer()
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
        var machine = Fixture.connectingWithTask.make()
        let attempt = machine.attempt
        machine.credentialApplied("token-1")
        #expect(machine.mayReplay(attempt: attempt))
        #expect(!machine.mayReplay(attempt: attempt - 1))
        guard case .replay(let task, let credentialID) = machine.replayBegins(attempt: attempt) else {
            Issue.record("the attempt that carried the credential is replayed")
            return
        }
        #expect(credentialID == "token-1")
        #expect((task as? FakeTask)?.id == attempt)
        #expect(machine.state == .awaitingCredential(replay: true))
        #expect(machine.retryCount == 0)
        let next = machine.attemptBegins(machine.currentRequest, now: Self.now)!.number
        #expect(!machine.mayReplay(attempt: next))
        #expect(machine.credentialWaitBegins(maximumWaits: 2) == .wait(count: 1))
        #expect(machine.state == .awaitingCredential(replay: false))
        #expect(machine.credentialWaitBegins(maximumWaits: 2) == .wait(count: 2))
        #expect(machine.credentialWaitBegins(maximumWaits: 2) == .giveUp(refreshes: 2))
        machine.credentialApplied("token-2")
        #expect(machine.state == .preparing)
        #expect(machine.credentialWaitBegins(maximumWaits: 2) == .wait(count: 1))
    }

    @Test("A waiting operation has no record; enqueueing twice or after a start is refused")
    func waiting() {
        var machine = TransferStateMachine(request: URLRequest(url: TransferStateMachineTests.url))
        #expect(!machine.hasRecord)
        _ = machine.attempt
        _ = machine.data
        _ = machine.state
        #expect(!machine.hasRecord)
        let first = machine.enqueue()
        let second = machine.enqueue()
        #expect(first && !second)
        var started = TransferStateMachine(request: URLRequest(url: TransferStateMachineTests.url))
        _ = started.start(isCancelled: false, now: Self.now, date: Date())
        let afterStart = started.enqueue()
        #expect(!afterStart)
    }

    @Test("A waiting operation's machine is no larger than the flags it replaced (32 bytes)")
    func size() {
        #expect(MemoryLayout<TransferStateMachine>.size <= 32)
    }
}

extension TransferStateMachine.State {
    var isFinished: Bool {
        if case .finished = self { return true }
        return false
    }
}

extension TransferStateMachine.BackOffAction {
    /// The request to send when the back-off is over; nil for a late fire.
    var request: URLRequest? {
        if case .send(let request) = self { return request }
        return nil
    }
}

extension TransferStateMachine.IdleAction {
    /// Whether the timer expires the transfer.
    var expires: Bool {
        if case .expire = self { return true }
        return false
    }
}

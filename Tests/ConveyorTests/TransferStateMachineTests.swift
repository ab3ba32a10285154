import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The operation's state machine alone, without sockets or timers firing: a table of
/// (state reached by driving events, event) → (exact action, next state), and a check that every
/// other cell of states × events is a drop (no action, state unchanged). The socket suites
/// (`OperationLifecycleTests`, `PauseResumeTests`, `RetryTests`, …) show the operation acts on
/// what the machine decides; these show what it decides.
@Suite("The transfer state machine, event by event")
struct TransferStateMachineTests {
    typealias State = TransferStateMachine.State

    /// A task that only says who it is.
    struct FakeTask: TransportTask {
        let id: Int
        func cancel() {}
        func pauseReceiving() {}
        func resumeReceiving() {}
    }

    /// The clock the machine is given: it moves only when a test moves it.
    struct FakeClock {
        private(set) var now = DispatchTime(uptimeNanoseconds: 1_000_000_000_000)
        mutating func advance(by seconds: Double) {
            now = DispatchTime(uptimeNanoseconds: now.uptimeNanoseconds + UInt64(seconds * 1e9))
        }
        /// `seconds` after the start.
        func later(by seconds: Double) -> DispatchTime {
            DispatchTime(uptimeNanoseconds: now.uptimeNanoseconds + UInt64(seconds * 1e9))
        }
    }

    static let url = URL(string: "http://127.0.0.1:1/file")!
    static let clock = FakeClock()
    static var now: DispatchTime { clock.now }
    static func head(_ status: Int, _ headers: [String: String] = [:]) -> HTTPResponseHead {
        HTTPResponseHead(url: url, statusCode: status, headers: HTTPHeaders(headers))
    }
    /// The fixtures' response: a GET's 200 with a strong validator, so its bytes can be continued.
    static let okHead = head(200, ["ETag": "\"v1\"", "Content-Length": "10"])
    /// A timer that never fires during a test (the machine only keeps and hands back timers).
    static func parkedTimer() -> DeadlineTimer { DeadlineScheduler.shared.schedule(after: 3600) {} }

    /// The states, each made by the events that lead to it (never by setting fields).
    enum Fixture: String, CaseIterable, CustomStringConvertible, Sendable {
        case idle, enqueued, pausedBeforeStart, startedWhilePaused, preparing, awaitingCredential, adapting, connecting
        case connectingWithTask, receiving, following, deciding, backingOff, pausing, paused, resumed, finishing, finished

        var description: String { rawValue }

        /// The state the fixture stands for.
        var state: State {
            let flight = TransferStateMachine.InFlight(number: 1)
            switch self {
            case .idle: return .idle(.init())
            case .enqueued: return .idle(.init(started: false, enqueued: true))
            case .pausedBeforeStart: return .pausedBeforeStart(.init())
            case .startedWhilePaused: return .pausedBeforeStart(.init(started: true, enqueued: false))
            case .preparing: return .preparing
            case .awaitingCredential: return .awaitingCredential(replay: false)
            case .adapting: return .adapting(flight)
            case .connecting, .connectingWithTask: return .connecting(flight)
            case .receiving: return .receiving(flight, .deliver)
            case .following: return .receiving(flight, .follow)
            case .deciding: return .retrying(.deciding)
            case .backingOff: return .retrying(.backingOff)
            case .pausing: return .paused(announced: false)
            case .paused: return .paused(announced: true)
            case .resumed: return .idle(.init(started: true, enqueued: true))
            case .finishing: return .finished(.init(lifecycle: .executing))
            case .finished: return .finished(.init(lifecycle: .finished))
            }
        }

        func make() -> TransferStateMachine {
            let now = TransferStateMachineTests.now
            var machine = TransferStateMachine(request: URLRequest(url: TransferStateMachineTests.url))
            switch self {
            case .idle: return machine
            case .enqueued:
                _ = machine.enqueue()
                return machine
            case .pausedBeforeStart, .startedWhilePaused:
                _ = machine.pause()
                machine.moved(to: .paused)
                if self == .startedWhilePaused { _ = machine.start(isCancelled: false, now: now, date: Date()) }
                return machine
            default: break
            }
            _ = machine.start(isCancelled: false, now: now, date: Date())
            machine.moved(to: .executing)
            // As the operation does: the idle timer is armed before the first attempt.
            _ = machine.timersArmed(idle: TransferStateMachineTests.parkedTimer(), resource: nil, now: now)
            switch self {
            case .preparing: return machine
            case .awaitingCredential:
                _ = machine.credentialWaitBegins(maximumWaits: 3)
                return machine
            case .adapting:
                _ = machine.attemptBegins(machine.currentRequest, now: now, adapting: true)
                return machine
            default: break
            }
            let attempt = machine.attemptBegins(machine.currentRequest, now: now)!.number
            if self == .connecting { return machine }
            _ = machine.taskStarted(FakeTask(id: attempt), attempt: attempt)
            if self == .connectingWithTask { return machine }
            _ = machine.headArrived(TransferStateMachineTests.okHead, attempt: attempt, now: now)
            _ = machine.bodyRouted(to: nil, streams: false, attempt: attempt)
            var redirect = URLRequest(url: TransferStateMachineTests.url.appendingPathComponent("next"))
            redirect.httpMethod = "GET"
            _ = machine.headDelivered(TransferStateMachineTests.okHead, redirect: self == .following ? redirect : nil)
            _ = machine.chunkArrived(Data("hello".utf8), attempt: attempt, limit: nil, now: now)
            switch self {
            case .receiving, .following: return machine
            case .deciding, .backingOff:
                _ = machine.attemptFailed(retryable: true, cancelled: false, maximumAttempts: 3)
                if self == .backingOff { _ = machine.retryScheduled(request: nil) }
            case .pausing, .paused, .resumed:
                _ = machine.pause()
                if self != .pausing { machine.moved(to: .paused) }
                if self == .resumed { machine.moved(to: .ready) }
            case .finishing, .finished:
                _ = machine.claimCompletion(.failure(.cancelled(reason: .explicit)), now: now)
                if self == .finished { machine.moved(to: .finished) }
            default: break
            }
            return machine
        }
    }

    /// An event of a table: applied to a machine, it answers an ``Outcome``.
    protocol MachineEvent: CaseIterable, CustomStringConvertible, Sendable {
        func apply(to machine: inout TransferStateMachine) -> Outcome
    }

    /// What an event answered, as a value a table can hold: the machine's actions carry tasks,
    /// timers and files, which are projected here.
    enum Outcome: Hashable, Sendable, CustomStringConvertible {
        /// The event's "nothing to do" answer.
        case drop
        /// An event whose answer is "acted" and no more.
        case acted
        case execute, finish, returnToReady, pauseWaiting
        /// `pause()` stops this: whether a task and a kept body file are handed over.
        case stop(task: Bool)
        case cancelTask, pauseTask, resumeTask
        /// A new attempt: its ordinal for the caller and the bytes a `Range` continues.
        case attempt(ordinal: Int, resumeOffset: Int64)
        case restart
        case accept(keep: Bool)
        case chunk(received: Int64, streams: Bool, reports: Bool)
        case reschedule, expire
        /// The failure goes to the retry policy with this attempt count.
        case askRetryPolicy(attemptCount: Int)
        /// The retry is scheduled; the coming attempt's number.
        case backOff(nextAttempt: Int)
        case sendAgain
        case waits(Int)
        /// No usable credential after that many refreshes.
        case giveUp(refreshes: Int)

        var description: String {
            switch self {
            case .drop: "drop"
            case .acted: "acted"
            case .execute: "execute"
            case .finish: "finish"
            case .returnToReady: "returnToReady"
            case .pauseWaiting: "pauseWaiting"
            case .stop(let task): "stop(task: \(task))"
            case .cancelTask: "cancelTask"
            case .pauseTask: "pauseTask"
            case .resumeTask: "resumeTask"
            case .attempt(let ordinal, let offset): "attempt(ordinal: \(ordinal), resumeOffset: \(offset))"
            case .restart: "restart"
            case .accept(let keep): "accept(keep: \(keep))"
            case .chunk(let received, let streams, let reports): "chunk(received: \(received), streams: \(streams), reports: \(reports))"
            case .reschedule: "reschedule"
            case .expire: "expire"
            case .askRetryPolicy(let count): "askRetryPolicy(attemptCount: \(count))"
            case .backOff(let next): "backOff(nextAttempt: \(next))"
            case .sendAgain: "sendAgain"
            case .waits(let count): "waits(\(count))"
            case .giveUp(let refreshes): "giveUp(refreshes: \(refreshes))"
            }
        }
    }

    /// The events that start, stop and steer a transfer. Transport events carry the number of
    /// the attempt begun last (``TransferStateMachine/attempt``): the one in flight, or a stale
    /// one between attempts; `stale…` events carry the one before it.
    enum Event: String, MachineEvent {
        case enqueue, start, startCancelled, cancel, pause, moveToReady, moveToExecuting, moveToPaused, moveToFinished
        case beginAttempt, beginAdapting, adapted, taskStarted, staleTask, head, staleHead, chunk, staleChunk, bytesSent
        case wantsPause, idleTimer, silentIdleTimer, attemptFailed, retryScheduled, retryTimerFired, credentialWait
        case credentialApplied, claim

        var description: String { rawValue }

        /// Applies the event with the clock at `TransferStateMachineTests.now`; `silentIdleTimer`
        /// reads it two minutes later.
        func apply(to machine: inout TransferStateMachine) -> Outcome {
            let clock = TransferStateMachineTests.clock
            let now = clock.now
            let attempt = machine.attempt
            switch self {
            case .enqueue: return machine.enqueue() ? .acted : .drop
            case .start, .startCancelled:
                switch machine.start(isCancelled: self == .startCancelled, now: now, date: Date()) {
                case .none: return .drop
                case .finish: return .finish
                case .execute: return .execute
                }
            case .cancel:
                machine.cancelRequested(.explicit)
                switch machine.cancelled() {
                case .none: return .drop
                case .finish: return .finish
                case .returnToReady: return .returnToReady
                }
            case .pause:
                switch machine.pause() {
                case .none: return .drop
                case .pauseWaiting: return .pauseWaiting
                case .stop(let halt): return .stop(task: halt.task != nil)
                }
            case .moveToReady, .moveToExecuting, .moveToPaused, .moveToFinished:
                // As `HTTPRequestOperation.transition(from:to:)`: only along the lifecycle's rules.
                let next: TransferStateMachine.Lifecycle =
                    switch self {
                    case .moveToReady: .ready
                    case .moveToExecuting: .executing
                    case .moveToPaused: .paused
                    default: .finished
                    }
                guard machine.lifecycle.canTransition(to: next) else { return .drop }
                machine.moved(to: next)
                return .acted
            case .beginAttempt, .beginAdapting:
                guard let begun = machine.attemptBegins(machine.currentRequest, now: now, adapting: self == .beginAdapting) else {
                    return .drop
                }
                return .attempt(ordinal: begun.ordinal, resumeOffset: begun.resumeOffset)
            case .adapted: return machine.adapted(attempt: attempt) ? .acted : .drop
            case .taskStarted, .staleTask:
                switch machine.taskStarted(FakeTask(id: 9), attempt: self == .taskStarted ? attempt : attempt - 1) {
                case .none: return .acted
                case .cancel: return .cancelTask
                case .pause: return .pauseTask
                case .resume: return .resumeTask
                }
            case .head, .staleHead:
                let number = self == .head ? attempt : attempt - 1
                switch machine.headArrived(TransferStateMachineTests.head(200), attempt: number, now: now) {
                case .ignore: return .drop
                case .restart: return .restart
                case .accept(_, let keep): return .accept(keep: keep)
                }
            case .chunk, .staleChunk:
                let number = self == .chunk ? attempt : attempt - 1
                switch machine.chunkArrived(Data("x".utf8), attempt: number, limit: nil, now: now) {
                case .ignore: return .drop
                case .tooLarge: return .finish
                case .accept(let update): return .chunk(received: update.received, streams: update.streams, reports: update.reports)
                }
            case .bytesSent: return machine.bytesSent(1, expected: 1, attempt: attempt, now: now) ? .acted : .drop
            case .wantsPause:
                _ = machine.pauseReceiving()
                return machine.transportWantsPause(attempt: attempt) ? .acted : .drop
            case .idleTimer, .silentIdleTimer:
                let reading = self == .idleTimer ? now : clock.later(by: 120)
                switch machine.idleTimerFired(interval: 60, now: reading) {
                case .none: return .drop
                case .reschedule: return .reschedule
                case .expire: return .expire
                }
            case .attemptFailed:
                switch machine.attemptFailed(retryable: true, cancelled: false, maximumAttempts: 5) {
                case .none: return .drop
                case .finish: return .finish
                case .askRetryPolicy(let count, _): return .askRetryPolicy(attemptCount: count)
                }
            case .retryScheduled:
                switch machine.retryScheduled(request: nil) {
                case .none: return .drop
                case .backOff(let next, _): return .backOff(nextAttempt: next)
                }
            case .retryTimerFired:
                switch machine.retryTimerFired() {
                case .none: return .drop
                case .send: return .sendAgain
                }
            case .credentialWait:
                switch machine.credentialWaitBegins(maximumWaits: 1) {
                case .none: return .drop
                case .wait(let count): return .waits(count)
                case .giveUp(let refreshes): return .giveUp(refreshes: refreshes)
                }
            case .credentialApplied:
                let before = machine.state
                machine.credentialApplied("token")
                return machine.state == before ? .drop : .acted
            case .claim: return machine.claimCompletion(.success(OneWayTransfer(nil)), now: now) == nil ? .drop : .finish
            }
        }
    }

    /// One cell: in `from`, `event` answers `action` and leaves `to`.
    struct Row<Event: MachineEvent>: CustomStringConvertible, Sendable {
        let from: Fixture
        let event: Event
        let action: Outcome
        let to: State

        init(_ from: Fixture, _ event: Event, _ action: Outcome, _ to: State) {
            (self.from, self.event, self.action, self.to) = (from, event, action, to)
        }

        var description: String { "\(from) + \(event) → \(action), \(to)" }

        /// Drives the fixture, applies the event, and checks the answer and the state.
        func check() {
            var machine = from.make()
            #expect(machine.state == from.state, "the fixture \(from) is the state it names")
            let answer = event.apply(to: &machine)
            #expect(answer == action, "\(from) + \(event)")
            #expect(machine.state == to, "\(from) + \(event)")
        }

        /// Every cell of `fixture` not in `rows` nor `impossible` drops its event and keeps its state.
        static func checkDrops(in fixture: Fixture, rows: [Row], impossible: Set<String>) {
            let listed = Set(rows.filter { $0.from == fixture }.map { "\($0.event)" })
            for event in Event.allCases where !listed.contains("\(event)") && !impossible.contains("\(fixture)+\(event)") {
                var machine = fixture.make()
                let action = event.apply(to: &machine)
                #expect(action == .drop, "\(fixture) + \(event) answered \(action)")
                #expect(machine.state == fixture.state, "\(fixture) + \(event) moved to \(machine.state)")
            }
        }

        /// Each cell once, and none impossible.
        static func checkTable(_ rows: [Row], impossible: Set<String>) {
            var seen: Set<String> = []
            for row in rows {
                let cell = "\(row.from)+\(row.event)"
                #expect(seen.insert(cell).inserted, "\(cell) twice")
                #expect(!impossible.contains(cell), "\(cell) is impossible")
            }
        }
    }

    /// The cells where the machine acts. Every other cell (`everyOtherCellDrops`) answers
    /// `.drop` and leaves the state as it was — except the impossible ones (`impossible`).
    static let table: [Row<Event>] = TransferStateMachineTable.rows

    /// Cells no transport or operation produces: a debug build stops on them. A transport
    /// event of an attempt whose adapters still run (its task is not made), a body chunk before
    /// its head, and the lifecycle moved to `finished` before the completion was claimed.
    static let impossible: Set<String> = Set(
        [
            "adapting+head", "adapting+chunk", "adapting+taskStarted", "adapting+bytesSent", "adapting+wantsPause", "connecting+chunk",
            "connectingWithTask+chunk",
        ] + Fixture.allCases.filter { !$0.state.isFinished }.map { "\($0)+moveToFinished" })

    @Test("Each row: the exact action and the next state", arguments: TransferStateMachineTable.rows)
    func row(_ row: Row<Event>) { row.check() }

    @Test("Every cell not in the table drops its event and keeps its state", arguments: Fixture.allCases)
    func everyOtherCellDrops(_ fixture: Fixture) { Row<Event>.checkDrops(in: fixture, rows: Self.table, impossible: Self.impossible) }

    @Test("The table has one row per cell, and lists no impossible cell")
    func tableIsATable() { Row<Event>.checkTable(Self.table, impossible: Self.impossible) }

    #if DEBUG
        @Test("An impossible cell stops a debug build: a head before the adapters answered")
        func headWhileAdaptingStops() async {
            await #expect(processExitsWith: .failure) {
                var machine = Fixture.adapting.make()
                _ = Event.head.apply(to: &machine)
            }
        }

        @Test("An impossible cell stops a debug build: the lifecycle finished before the completion was claimed")
        func finishedBeforeClaimStops() async {
            await #expect(processExitsWith: .failure) {
                var machine = Fixture.receiving.make()
                _ = Event.moveToFinished.apply(to: &machine)
            }
        }

        @Test("An impossible cell stops a debug build: a body chunk before its head")
        func chunkBeforeHeadStops() async {
            await #expect(processExitsWith: .failure) {
                var machine = Fixture.connecting.make()
                _ = Event.chunk.apply(to: &machine)
            }
        }
    #endif
}

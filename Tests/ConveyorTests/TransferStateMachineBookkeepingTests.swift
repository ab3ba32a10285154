import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The machine's bookkeeping events — routing a body, backpressure, redirects counted,
/// credentials stamped, metrics collected, the completion heard — in every state, as a table
/// like `TransferStateMachineTests`' for the events that start, stop and steer a transfer.
/// The rule they share: after the completion is claimed nothing changes, except what a caller
/// may still ask for (a `Progress`) and what only a finished operation does (its completion ran,
/// its monitors heard the finish). Only a never-run operation runs for the first time.
@Suite("The transfer state machine's bookkeeping, event by event")
struct TransferStateMachineBookkeepingTests {
    typealias Fixture = TransferStateMachineTests.Fixture
    typealias Outcome = TransferStateMachineTests.Outcome
    typealias Row = TransferStateMachineTests.Row<Event>

    /// What the events can change beside the state, compared before and after one.
    struct Fingerprint: Equatable {
        var redirects: Int
        var credentialID: String?
        var credentialWaits: Int
        var resumeOffset: Int64
        var preflightFailed: Bool
        var metricsCollected: Bool
        var source: String
        var pinned: [String]
        var lastActivity: UInt64

        init(_ machine: TransferStateMachine) {
            let record = machine.box
            redirects = machine.redirectCount
            credentialID = record?.appliedCredentialID
            credentialWaits = record?.credentialWaits ?? 0
            resumeOffset = record?.resumeOffset ?? 0
            preflightFailed = record?.preflightError != nil
            metricsCollected = record?.transferMetrics != nil
            source = "\(machine.responseSource)"
            pinned = record?.pinnedSecrets ?? []
            lastActivity = record?.lastActivity.uptimeNanoseconds ?? 0
        }
    }

    enum Event: String, TransferStateMachineTests.MachineEvent {
        case routeBody, backpressure, pauseReceiving, resumeReceiving, redirect, keptBytesLost, preflightFailed, continueSaved
        case awaitsConnection, leftConnectionQueue, metrics, source, progress, completionRan, whenCompletionRuns, retryTimerArmed
        case timersArmed, firstRun, monitorsHeardFinish, pinSecrets, replay

        var description: String { rawValue }

        /// Applies the event: `.acted` when the machine answered with an action or changed its
        /// state or what ``Fingerprint`` sees, else `.drop`.
        func apply(to machine: inout TransferStateMachine) -> Outcome {
            let attempt = machine.attempt
            let now = TransferStateMachineTests.now
            let before = Fingerprint(machine)
            let stateBefore = machine.state
            var answered = false
            switch self {
            case .routeBody:
                let file = ResponseBodyFile.temporary()
                defer { file.discard() }
                answered = machine.bodyRouted(to: file, streams: false, attempt: attempt)
                #expect(answered == (machine.bodyFile === file), "a refused route leaves the body file alone")
            case .backpressure:
                // 10 bytes queued against a limit of 1 pause the transfer; handled, they resume it.
                answered = machine.chunkQueued(10, limit: 1) && machine.chunkHandled(10, limit: 1)
                #expect(!machine.chunksPaused)
            case .pauseReceiving: answered = machine.pauseReceiving() != nil
            case .resumeReceiving: answered = machine.resumeReceiving() != nil
            case .redirect: machine.redirectFollowed()
            case .keptBytesLost:
                // Meaningful only with kept bytes: give the record some first, where it has one.
                machine.box?.resumeOffset = 5
                let seeded = Fingerprint(machine)
                machine.keptBytesLost()
                return Fingerprint(machine) != seeded ? .acted : .drop
            case .preflightFailed: machine.preflightFailed(.invalidMethod("BAD METHOD"))
            case .continueSaved:
                let file = ResponseBodyFile.temporary()
                defer { file.discard() }
                machine.continues(saved: 3, validator: "\"v1\"", total: 10, file: file)
            case .awaitsConnection: machine.awaitsConnection(attempt: attempt)
            case .leftConnectionQueue:
                machine.leftConnectionQueue(attempt: attempt, now: TransferStateMachineTests.clock.later(by: 1))
            case .metrics:
                machine.collected(
                    TransferMetrics(
                        domainLookup: 0, connect: 0, secureConnection: nil, firstByte: 0, lastByte: 0, httpVersion: "HTTP/1.1",
                        reusedConnection: false, remoteAddress: nil), attempt: attempt)
            case .source: machine.sourceReported(.cache, attempt: attempt)
            case .progress: answered = machine.progress(upload: false).made
            case .completionRan:
                answered =
                    machine.completionDelivered
                    != {
                        _ = machine.completionRan()
                        return machine.completionDelivered
                    }()
            case .whenCompletionRuns: answered = machine.whenCompletionRuns {}
            case .firstRun: answered = machine.firstRun(now: now, date: Date())
            case .monitorsHeardFinish:
                let before = machine.monitorsHaveHeardFinish
                machine.monitorsHeardFinish()
                answered = machine.monitorsHaveHeardFinish != before
            case .retryTimerArmed:
                let timer = TransferStateMachineTests.parkedTimer()
                defer { timer.cancel() }
                answered = machine.retryTimerArmed(timer)
            case .timersArmed:
                let timer = TransferStateMachineTests.parkedTimer()
                defer { timer.cancel() }
                answered = !machine.timersArmed(idle: timer, resource: nil, now: now).contains { $0 === timer }
            case .pinSecrets: answered = machine.secretsPinned(["secret-value"])
            case .replay:
                // Only an attempt that carried a stamped credential is replayed.
                if machine.mayReplay(attempt: attempt), case .replay = machine.replayBegins(attempt: attempt) { answered = true }
            }
            return answered || Fingerprint(machine) != before || machine.state != stateBefore ? .acted : .drop
        }
    }

    static let table: [Row] = TransferStateMachineTable.bookkeeping

    /// Cells no transport or operation produces (a debug build stops on them).
    static let impossible: Set<String> = [
        "adapting+routeBody", "adapting+awaitsConnection", "adapting+leftConnectionQueue", "adapting+metrics", "adapting+source",
        "connecting+routeBody", "connectingWithTask+routeBody",
    ]

    @Test("Each row: the exact action and the next state", arguments: TransferStateMachineTable.bookkeeping)
    func row(_ row: Row) { row.check() }

    @Test("Every cell not in the table drops its event and keeps its state", arguments: Fixture.allCases)
    func everyOtherCellDrops(_ fixture: Fixture) { Row.checkDrops(in: fixture, rows: Self.table, impossible: Self.impossible) }

    @Test("The table has one row per cell")
    func tableIsATable() { Row.checkTable(Self.table, impossible: Self.impossible) }

    @Test("A body routed after a cancel took the attempt is refused, so its new file is removed, not kept by nobody")
    func routeAfterCancel() throws {
        var machine = Fixture.connectingWithTask.make()
        let attempt = machine.attempt
        guard case .accept = machine.headArrived(TransferStateMachineTests.head(200), attempt: attempt, now: TransferStateMachineTests.now)
        else {
            Issue.record("head")
            return
        }
        // The cancel lands between the head's acceptance and the route.
        machine.cancelRequested(.explicit)
        _ = machine.cancelled()
        _ = machine.claimCompletion(.failure(.cancelled(reason: .explicit)), now: TransferStateMachineTests.now)
        let file = ResponseBodyFile.temporary()
        defer { file.discard() }
        let routed = machine.bodyRouted(to: file, streams: false, attempt: attempt)
        #expect(!routed)
        #expect(machine.bodyFile == nil)
    }

    @Test("The lifecycle moves only along its allowed transitions: every pair of states")
    func lifecycleTransitions() {
        typealias State = HTTPRequestOperation.State
        let states: [State] = [.ready, .executing, .paused, .finished]
        // AFNetworking's `AFStateTransitionIsValid`, with `resume()` returning a paused operation
        // to its queue as ready; nothing leaves finished, and nothing moves to where it is.
        let allowed: Set<String> = [
            "ready→executing", "ready→paused", "ready→finished", "executing→paused", "executing→finished", "paused→ready",
            "paused→finished",
        ]
        for from in states {
            for to in states {
                #expect(from.canTransition(to: to) == allowed.contains("\(from)→\(to)"), "\(from) → \(to)")
            }
        }
    }
}

extension ResponseBodyFile {
    /// A body file in the temporary directory, for the machine's tables.
    static func temporary() -> ResponseBodyFile {
        try! ResponseBodyFile(url: FileManager.default.temporaryDirectory.appendingPathComponent("machine-\(UUID())"))
    }
}

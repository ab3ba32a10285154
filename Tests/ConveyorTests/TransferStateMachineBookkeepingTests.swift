import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The machine's bookkeeping events — routing a body, backpressure, redirects counted,
/// credentials stamped, metrics collected, the completion heard — in every state, as
/// `TransferStateMachineTests` does for the events that start, stop and steer a transfer.
/// The rule they share: after the completion is claimed nothing changes, except what a caller
/// may still ask for (a `Progress`) and what only a finished operation does (its completion ran,
/// its monitors heard the finish). Only a never-run operation runs for the first time.
@Suite("The transfer state machine's bookkeeping, event by event")
struct TransferStateMachineBookkeepingTests {
    typealias Fixture = TransferStateMachineTests.Fixture

    /// What the events can change, compared before and after one.
    struct Fingerprint: Equatable {
        var redirects: Int
        var credentialID: String?
        var credentialWaits: Int
        var resumeOffset: Int64
        var preflightFailed: Bool
        var metricsCollected: Bool
        var source: String
        var awaitsConnection: Bool
        var delivered: Bool
        var pausesWhenTaskStarts: Bool

        init(_ machine: TransferStateMachine) {
            let record = machine.box
            redirects = machine.redirectCount
            credentialID = record?.appliedCredentialID
            credentialWaits = record?.credentialWaits ?? 0
            resumeOffset = record?.resumeOffset ?? 0
            preflightFailed = record?.preflightError != nil
            metricsCollected = record?.transferMetrics != nil
            source = "\(machine.responseSource)"
            awaitsConnection = record?.awaitsConnection ?? false
            delivered = machine.completionDelivered
            pausesWhenTaskStarts = machine.pausesWhenTaskStarts
        }
    }

    enum Event: String, CaseIterable, CustomStringConvertible {
        case routeBody, backpressure, pauseReceiving, resumeReceiving, redirect, credentialApplied, credentialWait
        case keptBytesLost, preflightFailed, continueSaved, leftConnectionQueue, metrics, source, progress
        case completionRan, whenCompletionRuns, retryTimerArmed, firstRun, monitorsHeardFinish

        var description: String { rawValue }

        /// Applies the event; true when the machine acted (answered with an action or changed
        /// what ``Fingerprint`` sees).
        func apply(to machine: inout TransferStateMachine) throws -> Bool {
            let attempt = machine.attempt
            let before = Fingerprint(machine)
            var answered = false
            switch self {
            case .routeBody:
                let file = try ResponseBodyFile(url: FileManager.default.temporaryDirectory.appendingPathComponent("route-\(UUID())"))
                defer { file.discard() }
                answered = machine.bodyRouted(to: file, streams: false, attempt: attempt)
                #expect(answered == (machine.bodyFile === file), "a refused route leaves the body file alone")
            case .backpressure:
                // 10 bytes queued against a limit of 1 pause the transfer; handled, they resume it.
                answered = machine.chunkQueued(10, limit: 1) && machine.chunkHandled(10, limit: 1)
            case .pauseReceiving: answered = machine.pauseReceiving() != nil
            case .resumeReceiving: answered = machine.resumeReceiving() != nil
            case .redirect: machine.redirectFollowed()
            case .credentialApplied: machine.credentialApplied("credential-2")
            case .credentialWait: answered = machine.credentialWaitBegins() > 0
            case .keptBytesLost:
                // Meaningful only with kept bytes: give the record some first, where it has one.
                machine.box?.resumeOffset = 5
                let seeded = Fingerprint(machine)
                machine.keptBytesLost()
                return Fingerprint(machine) != seeded
            case .preflightFailed: machine.preflightFailed(.invalidMethod("BAD METHOD"))
            case .continueSaved:
                let file = try ResponseBodyFile(url: FileManager.default.temporaryDirectory.appendingPathComponent("saved-\(UUID())"))
                defer { file.discard() }
                machine.continues(saved: 3, validator: "\"v1\"", total: 10, file: file)
            case .leftConnectionQueue:
                machine.awaitsConnection(attempt: attempt)
                let waiting = Fingerprint(machine)
                machine.leftConnectionQueue(attempt: attempt, now: TransferStateMachineTests.now)
                return Fingerprint(machine) != waiting
            case .metrics:
                machine.collected(
                    TransferMetrics(
                        domainLookup: 0, connect: 0, secureConnection: nil, firstByte: 0, lastByte: 0, httpVersion: "HTTP/1.1",
                        reusedConnection: false, remoteAddress: nil), attempt: attempt)
            case .source: machine.sourceReported(.cache, attempt: attempt)
            case .progress: answered = machine.progress(upload: false).made
            case .completionRan: _ = machine.completionRan()
            case .whenCompletionRuns: answered = machine.whenCompletionRuns {}
            case .firstRun: answered = machine.firstRun(now: TransferStateMachineTests.now, date: Date())
            case .monitorsHeardFinish:
                let before = machine.monitorsHaveHeardFinish
                machine.monitorsHeardFinish()
                answered = machine.monitorsHaveHeardFinish != before
            case .retryTimerArmed:
                let timer = DeadlineScheduler.shared.schedule(after: 3600) {}
                defer { timer.cancel() }
                answered = machine.retryTimerArmed(timer)
            }
            return answered || Fingerprint(machine) != before
        }
    }

    static let running: Set<Event> = [
        .routeBody, .redirect, .credentialApplied, .credentialWait, .keptBytesLost, .progress, .whenCompletionRuns,
        .retryTimerArmed,
    ]

    /// What each state acts on. Every state may be asked for a `Progress` and for a call when
    /// its completion has run; only a claimed completion can be marked as run.
    static let acts: [Fixture: Set<Event>] = [
        // Not started: the preflight error and a saved download's continuation are set here. The
        // chunk block's counters run in every state but the last: its chunks were handed over
        // earlier and are handled whenever the callback queue gets to them.
        .waiting: [
            .backpressure,
            .pauseReceiving, .redirect, .credentialApplied, .credentialWait, .preflightFailed, .continueSaved, .progress,
            .whenCompletionRuns, .firstRun,
        ],
        .enqueued: [
            .backpressure, .pauseReceiving, .redirect, .credentialApplied, .credentialWait, .preflightFailed, .continueSaved, .progress,
            .whenCompletionRuns, .firstRun,
        ],
        .pausedBeforeStart: [
            .backpressure, .pauseReceiving, .redirect, .credentialApplied, .credentialWait, .preflightFailed, .continueSaved, .progress,
            .whenCompletionRuns, .firstRun,
        ],
        // No task yet: a consumer's pause waits for it (the flag), and there is no task to resume.
        .executingWithoutTask: running.union([.backpressure, .pauseReceiving, .leftConnectionQueue, .metrics, .source]),
        .executingWithTask: running.union([.backpressure, .pauseReceiving, .resumeReceiving, .leftConnectionQueue, .metrics, .source]),
        .receiving: running.union([.backpressure, .pauseReceiving, .resumeReceiving, .leftConnectionQueue, .metrics, .source]),
        // The failed attempt is over; the coming one's number is current but carries no task yet,
        // so no transport event can match it (see `TransferStateMachineTests.acts`).
        .betweenAttempts: running.union([.backpressure, .pauseReceiving, .leftConnectionQueue, .metrics, .source]),
        // Paused: the task is cancelled; the kept bytes and their file wait for the resume.
        .paused: [
            .backpressure, .pauseReceiving, .redirect, .credentialApplied, .credentialWait, .keptBytesLost, .progress, .whenCompletionRuns,
        ],
        .finished: [.progress, .completionRan, .whenCompletionRuns, .monitorsHeardFinish],
    ]

    @Test("Every bookkeeping event in every state: acted on or dropped as the table says", arguments: Fixture.allCases)
    func everyEventInEveryState(_ fixture: Fixture) throws {
        for event in Event.allCases {
            var machine = fixture.make()
            let acted = try event.apply(to: &machine)
            #expect(acted == Self.acts[fixture]!.contains(event), "\(event) in \(fixture)")
        }
    }

    @Test("A body routed after a cancel took the attempt is refused, so its new file is removed, not kept by nobody")
    func routeAfterCancel() throws {
        var machine = Fixture.executingWithTask.make()
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
        let file = try ResponseBodyFile(url: FileManager.default.temporaryDirectory.appendingPathComponent("late-\(UUID())"))
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

import Conveyor
import ConveyorLocking
import ConveyorTesting
import Foundation
import Testing

/// The one rule for a setting assigned after start (issue 52): an operation reads its settings
/// when it starts and again when it resumes, so one assigned while it runs applies from the
/// next resume — never halfway through a run.
@Suite("Settings assigned while an operation runs")
struct SettingsAfterStartTests {
    /// Narrows the acceptable status codes to none once the head arrived: the run goes on with
    /// the codes it started with.
    final class NarrowingOperation: HTTPRequestOperation, @unchecked Sendable {
        // @unchecked Sendable: no state of its own.
        override func didReceive(response: HTTPResponseHead) {
            acceptableStatusCodes = IndexSet()
        }
    }

    @Test(
        "A setting assigned while the operation runs does not change that run (validation read at start)",
        arguments: HTTPClient.TransportKind.testedKinds)
    func assignedWhileRunning(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let client = testClient(server, transport)
        let operation = client.operation(NarrowingOperation.self, with: try client.request(method: .get, path: "get"))
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        let outcome = await probe.outcome()
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        // The getter shows what was assigned: it applies from the next resume.
        #expect(operation.acceptableStatusCodes.isEmpty)
    }

    @Test(
        "A setting assigned while paused applies from the resume: the idle timeout, and the error names it",
        arguments: HTTPClient.TransportKind.testedKinds)
    func assignedWhilePaused(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let held = HeldRoute(server)
        defer {
            // Both held requests (the paused attempt's and the resumed one's) may go.
            held.release()
            held.release()
        }
        let client = testClient(server, transport) { $0.idleTimeout = 60 }
        let operation = client.operation(with: try client.request(method: .get, path: "hold"), success: nil, failure: nil)
        let probe = CompletionProbe()
        probe.attach(to: operation)
        client.enqueue(operation)
        await held.arrived()
        operation.pause()
        operation.idleTimeout = 0.5
        operation.resume()
        let outcome = await probe.outcome()
        guard case .timedOut(.idle, let after)? = outcome.error else {
            Issue.record("expected an idle timeout, got \(String(describing: outcome.error))")
            return
        }
        #expect(after == 0.5)
        #expect(held.answeredCount == 0)
    }
}

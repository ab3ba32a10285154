import Conveyor
import ConveyorTesting
import Foundation
import Testing

/// Found by the independent attack on the operation's lifecycle: on the URLSession transport a
/// pause or cancel during a redirect killed the process (corelibs traps when a redirect callback
/// is answered after the task was cancelled). Run in a child process, so a trap fails this test
/// instead of ending the whole suite.
@Suite("Pause, resume and cancel during redirects")
struct RedirectChaosTests {
    @Test(
        "200 GETs of a redirect chain, each paused and resumed or cancelled at a random moment: no trap, one completion each",
        arguments: HTTPClient.TransportKind.testedKinds)
    func redirectChaos(transport: HTTPClient.TransportKind) async throws {
        try await withServer { server, _ in
            let child = try HelperProcess([
                "redirect-chaos", server.baseURL.absoluteString, transport == .urlSession ? "urlsession" : "curl", "200",
            ])
            // A watchdog, not synchronisation: a child that hangs fails instead of holding the suite.
            DispatchQueue.global().asyncAfter(deadline: .now() + 120) { child.kill(SIGKILL) }
            var lines: [String] = []
            for await line in child.lines { lines.append(line) }
            await child.exited()
            #expect(!child.process.terminatedBySignal && child.process.terminationStatus == 0, "\(lines)")
            #expect(lines.last == "done 200", "\(lines)")
        }
    }
}

import ConveyorTestSupport
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Outbox: the directory's lock, across processes and children", .timeLimit(.notAHang))
struct OutboxLockTests {
    /// Runs the helper's outbox scenario with nothing to send; returns its exit status and lines.
    static func helperOpens(_ server: LocalHTTPServer, _ directory: URL) async throws -> (status: Int32, lines: [String]) {
        let helper = try OutboxCrashTests.child(server, directory: directory, count: 0, transport: "curl", bodyBytes: 0)
        var lines: [String] = []
        for await line in helper.lines { lines.append(line) }
        await helper.exited()
        return (helper.process.terminationStatus, lines)
    }

    @Test("Another process is refused while this one holds the directory, also after a refused owner via a symlink here")
    func acrossProcesses() async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let links = try TemporaryDirectory()
        let client = testClient(server, .curl)
        let first = try client.outbox(directory: directory.url)
        // Another path to the same directory: refused here without opening (and, on closing,
        // releasing) the lock file that the first outbox holds.
        let alias = links.url.appendingPathComponent("alias")
        try FileManager.default.createSymbolicLink(at: alias, withDestinationURL: directory.url)
        #expect { try client.outbox(directory: alias) } throws: { error in
            guard case .outboxFailed(.directoryInUse)? = error as? ConveyorError else { return false }
            return true
        }
        let refused = try await Self.helperOpens(server, directory.url)
        #expect(refused.status == 2 && refused.lines.first?.contains("in use by another outbox") == true, "\(refused)")
        first.close()
        let opened = try await Self.helperOpens(server, directory.url)
        #expect(opened.status == 0 && opened.lines.last == "idle", "\(opened)")
    }

    @Test("A child process that shares the lock file's open description does not keep the directory once the outbox is closed")
    func childDoesNotHoldTheLock() throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let client = testClient(server, .curl)
        let first = try client.outbox(directory: directory.url)
        let descriptor = try #require(first.state.withLock { $0.directoryLock?.descriptor })
        // What any child spawned between `fork` and `exec` holds for a moment, held here for as
        // long as the child lives: the lock file's open description, as its standard input.
        let child = try ChildProcess(
            "/bin/sleep", ["60"], standardInput: .file(FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)))
        defer {
            child.signal(SIGKILL)
            child.waitUntilExit()
        }
        first.close()
        // An `flock` would still be held through the child's copy: `directoryInUse`.
        let second = try client.outbox(directory: directory.url)
        second.close()
    }
}

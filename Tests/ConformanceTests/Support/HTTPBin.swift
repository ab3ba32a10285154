import Conveyor
import ConveyorTestSupport
import Foundation
import Synchronization

/// A local httpbin (the Python service nobody here wrote), started once per test run.
///
/// The first call installs `httpbin` and `gunicorn` into a virtualenv under `.build/` (kept for
/// later runs), then starts gunicorn on a random loopback port through a small Python
/// launcher. The launcher binds the port itself before gunicorn starts, so the port is
/// accepting connections the moment it is known (no readiness polling), and it stops gunicorn
/// as soon as this test process is gone, so no server outlives the run.
enum HTTPBin {
    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    /// The base URL of the running httpbin, starting it on first use.
    ///
    /// Installing and starting take seconds of blocking work (pip, a subprocess): they run on a
    /// thread of their own, never on Swift Concurrency's cooperative pool, which has only as
    /// many threads as cores and would starve every other test meanwhile.
    static func baseURL() async throws -> URL {
        try await shared(onUnixSocket: false) { try start(socketPath: nil) }
    }

    /// The `http+unix` base URL of a second httpbin, served by gunicorn on a Unix domain socket
    /// (`unix:PATH`, bound by the launcher as the TCP one is), starting it on first use.
    static func unixSocketBaseURL() async throws -> URL {
        try await shared(onUnixSocket: true) { try start(socketPath: "/tmp/conveyor-httpbin-\(UUID().uuidString.prefix(8)).sock") }
    }

    private static func shared(onUnixSocket: Bool, start: @escaping @Sendable () throws -> URL) async throws -> URL {
        try await withCheckedThrowingContinuation { continuation in
            let startNow = withState(onUnixSocket) { state -> Bool in
                switch state {
                case .ready(let result):
                    continuation.resume(with: result)
                    return false
                case .starting(var waiters):
                    waiters.append(continuation)
                    state = .starting(waiters)
                    return false
                case .idle:
                    state = .starting([continuation])
                    return true
                }
            }
            guard startNow else { return }
            Thread.detachNewThread {
                let result = Result { try start() }
                let waiters = withState(onUnixSocket) { state -> [CheckedContinuation<URL, any Error>] in
                    defer { state = .ready(result) }
                    if case .starting(let waiters) = state { return waiters }
                    return []
                }
                waiters.forEach { $0.resume(with: result) }
            }
        }
    }

    private enum StartState {
        case idle
        case starting([CheckedContinuation<URL, any Error>])
        case ready(Result<URL, any Error>)
    }
    private static let state = Mutex(StartState.idle)
    private static let socketState = Mutex(StartState.idle)

    /// The start state of the TCP server or of the Unix socket one.
    private static func withState<Result>(_ onUnixSocket: Bool, _ body: (inout StartState) -> Result) -> Result {
        onUnixSocket ? socketState.withLock { body(&$0) } : state.withLock { body(&$0) }
    }

    /// Starts gunicorn on a loopback port, or on a Unix domain socket at `socketPath`.
    private static func start(socketPath: String?) throws -> URL {
        let venv = try SetupTools.virtualenv("httpbin-venv", packages: ["httpbin", "gunicorn"])
        let output = Pipe()
        let log = SetupTools.packageRoot.appendingPathComponent(".build/httpbin\(socketPath == nil ? "" : "-unix").log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logHandle = try? FileHandle(forWritingTo: log)
        do {
            _ = try ChildProcess(
                venv.appendingPathComponent("bin/python").path,
                ["-c", launcher, String(ProcessInfo.processInfo.processIdentifier), venv.appendingPathComponent("bin/gunicorn").path]
                    + (socketPath.map { [$0] } ?? []),
                standardOutput: .pipe(output), standardError: logHandle.map { .file($0) } ?? .null)
        } catch {
            throw SetupError(description: "could not start the httpbin launcher: \(error)")
        }
        // The launcher prints the port (or the socket's path) on its first line.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = PipeIO.readChunk(from: output.fileHandleForReading)
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let printed = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let socketPath {
            guard printed == socketPath, let url = HTTPClient.unixSocketURL(socketPath: socketPath) else {
                throw SetupError(description: "httpbin launcher did not bind \(socketPath); see \(log.path)")
            }
            return url
        }
        guard let port = Int(printed) else {
            throw SetupError(description: "httpbin launcher printed no port; see \(log.path)")
        }
        return URL(string: "http://127.0.0.1:\(port)/")!
    }

    /// Binds the port (or the Unix socket's path, the optional third argument), hands the
    /// socket to gunicorn (`fd://`), prints the port (or the path), and stops gunicorn once its
    /// parent (this test process) is gone. Binding first means the socket accepts connections
    /// the moment its name is printed: no readiness polling.
    private static let launcher = """
        import os, socket, subprocess, sys, time
        parent, gunicorn = int(sys.argv[1]), sys.argv[2]
        path = sys.argv[3] if len(sys.argv) > 3 else None
        if path:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(path)
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        sock.set_inheritable(True)
        server = subprocess.Popen([gunicorn, "--bind", "fd://%d" % sock.fileno(), "--worker-class", "gthread",
                                   "--workers", "2", "--threads", "32", "--graceful-timeout", "1",
                                   "--log-level", "warning", "httpbin:app"],
                                  pass_fds=(sock.fileno(),))
        print(path or sock.getsockname()[1], flush=True)
        try:
            while os.getppid() == parent and server.poll() is None:
                time.sleep(0.2)
        finally:
            server.terminate()
            try:
                server.wait(3)
            except subprocess.TimeoutExpired:
                server.kill()
            if path and os.path.exists(path):
                os.unlink(path)
        """
}

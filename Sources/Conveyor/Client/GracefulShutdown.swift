import ConveyorLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Notification.Name {
    /// Posted when ``GracefulShutdown`` handles its first signal, before the clients drain;
    /// `userInfo["signal"]` is the signal number.
    public static let conveyorShutdownWillDrain = Notification.Name("org.conveyor.shutdown.willDrain")
}

/// Finishes in-flight transfers when the process is told to stop (SIGTERM from systemd or a
/// container runtime, Ctrl-C) instead of dying mid-upload.
///
/// ```swift
/// GracefulShutdown.install(clients: [APIClient.shared], timeout: 10)
/// ```
/// On the first signal every client is drained (``HTTPClient/drain(timeout:queued:completionGrace:)``), then
/// the process exits with status 0 — after the completion block of every operation the drain
/// waited for or cancelled has run, so the app has heard every outcome (at most `timeout` plus
/// ``HTTPClient/drainCompletionGrace`` after the signal). A second signal exits at once with
/// 128 + the signal number.
public enum GracefulShutdown {
    /// Dispatch sources, thread-safe to cancel: the next installation takes them out and cancels them.
    private static let installed = Lock<[LockedReference<any DispatchSourceSignal>]>([])
    private static let signalled = Lock(false)

    /// Installs the signal handling, and returns once a signal is handled (at most 2 s later).
    /// Calling it again replaces the previous installation.
    /// - Parameters:
    ///   - signals: The signals to handle; default SIGTERM and SIGINT.
    ///   - clients: The clients to drain.
    ///   - timeout: Seconds running operations get to finish (completion blocks then get up to
    ///     ``HTTPClient/drainCompletionGrace`` more to run).
    ///   - exit: How the process ends; default `Foundation.exit`. Tests replace it.
    public static func install(
        signals: [Int32] = [SIGTERM, SIGINT], clients: [HTTPClient], timeout: TimeInterval,
        exit: @escaping @Sendable (Int32) -> Void = { Foundation.exit($0) }
    ) {
        let queue = DispatchQueue(label: "org.conveyor.shutdown")
        let registered = DispatchSemaphore(value: 0)
        let sources = signals.map { number -> LockedReference<any DispatchSourceSignal> in
            // The default action would kill the process before the source sees the signal.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let second = signalled.withLock { already -> Bool in
                    defer { already = true }
                    return already
                }
                if second {
                    exit(128 + number)
                    return
                }
                NotificationCenter.default.post(name: .conveyorShutdownWillDrain, object: nil, userInfo: ["signal": number])
                Task {
                    await withTaskGroup(of: Void.self) { group in
                        for client in clients { group.addTask { await client.drain(timeout: timeout) } }
                    }
                    exit(0)
                }
            }
            source.setRegistrationHandler { registered.signal() }
            source.resume()
            return LockedReference(source)
        }
        // `resume()` registers the source later, on the dispatch manager's thread; a signal
        // before that meets SIG_IGN and is lost, and the process never stops. Return once the
        // handlers are in place (bounded: a stalled dispatch must not hang the caller).
        let registrationDeadline = DispatchTime.now() + 2
        for _ in sources where registered.wait(timeout: registrationDeadline) == .timedOut { break }
        let previous = installed.withLock { current in
            defer { current = sources }
            return current
        }
        previous.forEach { $0.value.cancel() }
        signalled.withLock { $0 = false }
    }
}

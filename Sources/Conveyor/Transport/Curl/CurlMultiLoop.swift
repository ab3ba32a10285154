#if os(Linux)
import Foundation
import ConveyorLocking
import CConveyorCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One libcurl multi handle (a ``CurlDriver``) shared by the threads that use it, and the
/// thread that waits for its sockets.
///
/// libcurl allows one thread at a time in a multi handle, so the driver sits behind a lock
/// and whoever holds it drives. A thread that starts or cancels a transfer takes the lock if
/// it is free and does the work itself: a request goes out on the caller's thread, with no
/// hand-off (measured: a hand-off to the loop thread cost a wake-up and a poll round per
/// request). When the lock is busy — another thread is driving, or the call comes from inside
/// a libcurl callback — the command goes to the inbox and the loop thread is woken to run it.
/// The loop thread sleeps in `epoll_wait` on libcurl's sockets (registered by its socket
/// callback), an eventfd for wake-ups, and libcurl's next timer.
final class CurlMultiLoop: Sendable {
    private enum Command {
        case start(CurlTransfer)
        case cancel(CurlTransfer)
    }

    private struct Inbox {
        var commands: [Command] = []
        var threadRunning = false
        var invalidated = false
    }

    private let driver: Lock<CurlDriver>
    private let inbox = Lock(Inbox())
    private let epoll: Int32
    /// Written to wake the loop thread; read (reset) by it.
    private let wakeup: Int32

    init(library: CurlLibrary, maximumConnectionsPerHost: Int) {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeup = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeup
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event)
        let driver = CurlDriver(library: library, epoll: epoll, maximumConnectionsPerHost: maximumConnectionsPerHost)
        driver.installCallbacks()
        self.driver = Lock(driver)
    }

    deinit {
        close(wakeup)
        close(epoll)
    }

    /// Starts `transfer`: on this thread when no other is driving libcurl, else on the loop thread.
    func start(_ transfer: CurlTransfer) {
        submit(.start(transfer))
    }

    /// Stops `transfer` from any thread; its delegate hears a cancellation error, unless it
    /// had already completed.
    func cancel(_ transfer: CurlTransfer) {
        transfer.markCancelled()
        submit(.cancel(transfer))
    }

    /// Lets running transfers finish, then stops the thread (a later start restarts it).
    func invalidate() {
        let running = inbox.withLock { inbox -> Bool in
            inbox.invalidated = true
            return inbox.threadRunning
        }
        if running { wake() }
    }

    private func submit(_ command: Command) {
        let driven = driver.withLockIfAvailable { driver -> Bool in
            apply(command, to: driver)
            return settle(driver)
        }
        switch driven {
        case nil:
            // Busy (or called from a callback of this very driver): the loop thread runs it.
            let startThread = inbox.withLock { inbox -> Bool in
                inbox.commands.append(command)
                defer { inbox.threadRunning = true }
                return !inbox.threadRunning
            }
            if startThread { startLoopThread() } else { wake() }
        case let mustWake?:
            // The transfer is in the multi handle; the loop thread must be there to hear its
            // sockets (it exits only when idle, deciding under both locks, so this sees it).
            let startThread = inbox.withLock { inbox -> Bool in
                defer { inbox.threadRunning = true }
                return !inbox.threadRunning
            }
            if startThread { startLoopThread() } else if mustWake { wake() }
        }
    }

    private func apply(_ command: Command, to driver: CurlDriver) {
        switch command {
        case let .start(transfer): driver.start(transfer)
        case let .cancel(transfer): driver.cancel(transfer)
        }
    }

    /// Runs queued commands and due timers until none is left.
    /// - Returns: Whether libcurl's next timer is earlier than the loop thread's wake-up.
    private func settle(_ driver: CurlDriver) -> Bool {
        while true {
            driver.runDueTimers()
            let commands = inbox.withLock { inbox -> [Command] in
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return inbox.commands
            }
            if commands.isEmpty { break }
            for command in commands { apply(command, to: driver) }
        }
        guard let deadline = driver.timerDeadline else { return false }
        return deadline < driver.loopSleepsUntil
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, MemoryLayout<UInt64>.size)
    }

    // MARK: - The loop thread

    private func startLoopThread() {
        let thread = Thread { [self] in run() }
        thread.name = "org.conveyor.curl"
        thread.start()
    }

    private func run() {
        let capacity = 64
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        var timeout: Int32 = 0
        while true {
            let count = epoll_wait(epoll, events, Int32(capacity), timeout)
            let next = driver.withLock { driver -> Int32? in
                for index in 0..<max(0, Int(count)) {
                    let event = events[index]
                    let socket = event.data.fd
                    if socket == wakeup {
                        var value: UInt64 = 0
                        _ = read(wakeup, &value, MemoryLayout<UInt64>.size)
                        continue
                    }
                    var mask: Int32 = 0
                    if event.events & EPOLLIN.rawValue != 0 { mask |= CurlConstant.selectIn }
                    if event.events & EPOLLOUT.rawValue != 0 { mask |= CurlConstant.selectOut }
                    if event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { mask |= CurlConstant.selectError }
                    driver.socketReady(socket, events: mask)
                }
                _ = settle(driver)
                if driver.isIdle {
                    let exit = inbox.withLock { inbox -> Bool in
                        guard inbox.invalidated, inbox.commands.isEmpty else { return false }
                        inbox.threadRunning = false
                        inbox.invalidated = false
                        return true
                    }
                    if exit { return nil }
                }
                // Sleeps until libcurl's timer, at most a second (a wake-up ends it early).
                let now = DispatchTime.now()
                let cap = now + .seconds(1)
                let until = min(driver.timerDeadline ?? cap, cap)
                driver.loopSleepsUntil = until
                let nanoseconds = until.uptimeNanoseconds > now.uptimeNanoseconds ? until.uptimeNanoseconds - now.uptimeNanoseconds : 0
                return Int32((nanoseconds + 999_999) / 1_000_000)
            }
            guard let next else { break }
            timeout = next
        }
    }
}
#endif

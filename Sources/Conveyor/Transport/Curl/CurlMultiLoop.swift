#if os(Linux)
    import Foundation
    import CConveyorCurl
    import ConveyorLocking

    /// One libcurl multi handle, the thread that drives it, and the hand-over that lets a caller
    /// drive it while that thread is idle.
    ///
    /// libcurl allows one thread at a time in a multi handle; `owner` says which. While transfers
    /// run, the loop thread owns it: it sleeps in `curl_multi_poll` (which returns when a socket is
    /// ready, a libcurl timer is due, or `curl_multi_wakeup` — callable from any thread — is called)
    /// and runs the commands other threads put in the inbox, many per wake-up. When nothing runs,
    /// the loop thread gives the handle up and waits; the next thread that starts a transfer then
    /// adds it and lets libcurl write the request itself, and only then hands the handle back and
    /// wakes the loop thread — whose wake-up now overlaps the server's work instead of delaying the
    /// request (measured: 20 µs of a 290 µs sequential request).
    ///
    /// It is also the executor of the transfers it runs (``TransferExecutor``): their callbacks
    /// already run on the owner, and other events of an operation (a cancel, a timer, an
    /// adapter's answer) come in as `run` commands — at once on the calling thread when the
    /// handle is idle, else by the owner between two `curl_multi_perform`s.
    final class CurlMultiLoop: TransferExecutor, @unchecked Sendable {
        // @unchecked Sendable: `multi` is set once and only used by the owner (see `owner`); the
        // mutable state is `inbox` (commands and ownership, one Lock) and `owned` (the transfers,
        // behind a Lock that only the owner takes, so it is never contended). `driver` is an
        // atomic the owner sets while it runs.

        typealias Handle = CurlLibrary.Handle

        private enum Command {
            case start(CurlTransfer)
            case cancel(CurlTransfer)
            case unpause(CurlTransfer)
            /// A transfer event to run on the owner (see ``TransferExecutor``).
            case run(@Sendable () -> Void)
        }

        /// Who may call into the multi handle.
        private enum Owner {
            /// The loop thread (or, before it starts, the thread that will run it).
            case loop
            /// Nobody: the loop thread waits on `idle` (or is not running); a caller may take it.
            case idle
            /// A caller that found it idle and is driving it.
            case caller
        }

        private struct Inbox {
            var commands: [Command] = []
            var owner = Owner.idle
            var threadRunning = false
            var invalidated = false
        }

        /// What the owner keeps: the transfers in the multi handle (which keeps them alive for the
        /// callbacks' unretained pointers) and easy handles kept for reuse.
        private struct Owned {
            var running: [Handle: CurlTransfer] = [:]
            var spare: [Handle] = []
        }

        private let library: CurlLibrary
        private let multi: Handle?
        private let inbox = Lock(Inbox())
        private let owned = Lock(Owned())
        /// Signalled once per hand-back of the handle to the idle loop thread.
        private let idle = DispatchSemaphore(value: 0)
        /// The thread that owns the handle while it applies commands and drives libcurl.
        private let driver = ExecutorThread()

        init(library: CurlLibrary, maximumConnectionsPerHost: Int) {
            self.library = library
            multi = library.multiInit()
            if let multi {
                library.setMultiOption(multi, .pipelining, CurlConstant.pipeMultiplex)
                if maximumConnectionsPerHost > 0 { library.setMultiOption(multi, .maxHostConnections, maximumConnectionsPerHost) }
                // libcurl sizes its connection cache from the transfers currently added (4 per
                // transfer): between bursts it shrinks and closes idle connections, which the next
                // burst opens again (13 new connections per 2,000 GETs at 16 in flight, measured).
                // The cache is keyed by origin, so it must also hold a connection or two for every
                // origin in use: at 64 (4 × 6 per host, the previous size) 100 origins round robin
                // closed a connection for every request (10,000 connections per 10,000 GETs).
                // 256 is what a browser keeps open at most (Chrome's socket pool); idle
                // connections cost a descriptor each and libcurl closes them after 118 s.
                library.setMultiOption(multi, .maxConnects, Self.connectionCacheSize(maximumConnectionsPerHost: maximumConnectionsPerHost))
            }
        }

        deinit {
            if let multi { _ = library.multiCleanup(multi) }
        }

        /// Idle connections kept for reuse: 256, or 4 per allowed connection per host if more.
        static func connectionCacheSize(maximumConnectionsPerHost: Int) -> Int {
            Swift.max(256, maximumConnectionsPerHost * 4)
        }

        /// Starts `transfer`: on this thread when the handle is idle, else on the loop thread.
        func start(_ transfer: CurlTransfer) {
            guard multi != nil else {
                transfer.fail(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_multi_init failed"]))
                return
            }
            submit(.start(transfer))
        }

        /// Stops `transfer` from any thread; its delegate hears a cancellation error, unless it
        /// had already completed.
        func cancel(_ transfer: CurlTransfer) {
            transfer.markCancelled()
            submit(.cancel(transfer))
        }

        /// Receives `transfer`'s body again after it paused (``CurlTransfer/requestPause()``):
        /// `curl_easy_pause` may only be called by the handle's owner, so it goes through the inbox.
        func unpause(_ transfer: CurlTransfer) {
            guard transfer.clearPause() else { return }
            submit(.unpause(transfer))
        }

        // MARK: - TransferExecutor

        func execute(urgent: Bool, _ work: @escaping @Sendable () -> Void) {
            // Commands run in order; a cancel is one command among few (body chunks are not
            // queued here, libcurl hands them over as it reads them), so `urgent` needs no lane.
            submit(.run(work))
        }

        var isCurrent: Bool { driver.isCurrent }

        /// Lets running transfers finish, then stops the thread (a later start restarts it).
        func invalidate() {
            let action = inbox.withLock { inbox -> HandBack in
                inbox.invalidated = true
                guard inbox.threadRunning else { return .none }
                guard inbox.owner == .idle else { return inbox.owner == .loop ? .wakeUp : .none }
                inbox.owner = .loop
                return .signal
            }
            perform(action)
        }

        private enum HandBack {
            case none, wakeUp, signal, startThread
        }

        private func submit(_ command: Command) {
            let action = inbox.withLock { inbox -> HandBack? in
                if inbox.owner == .idle {
                    inbox.owner = .caller
                    return nil  // this thread drives
                }
                inbox.commands.append(command)
                // A caller that is driving hands the handle back and wakes the loop thread after.
                return inbox.owner == .loop ? .wakeUp : HandBack.none
            }
            if let action {
                perform(action)
                return
            }
            let busy = driver.running {
                owned.withLock { owned in
                    apply(command, to: &owned)
                    // What the command itself submitted (a transfer event that starts a task)
                    // runs now, on this thread, as it would have had the command come first.
                    while let more = takeCommands() {
                        for command in more { apply(command, to: &owned) }
                    }
                    return process(&owned)
                }
            }
            handBack(busy: busy)
        }

        /// Takes the commands waiting in the inbox, or nil when there are none.
        private func takeCommands() -> [Command]? {
            inbox.withLock { inbox -> [Command]? in
                guard !inbox.commands.isEmpty else { return nil }
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return inbox.commands
            }
        }

        /// Gives the handle up after a caller drove it: to the loop thread when a transfer runs or
        /// a command waits (starting the thread if it is not running), else back to idle.
        private func handBack(busy: Bool) {
            let action = inbox.withLock { inbox -> HandBack in
                if !busy, inbox.commands.isEmpty, !(inbox.invalidated && inbox.threadRunning) {
                    inbox.owner = .idle
                    return .none
                }
                inbox.owner = .loop
                guard inbox.threadRunning else {
                    inbox.threadRunning = true
                    return .startThread
                }
                return .signal
            }
            perform(action)
        }

        private func perform(_ action: HandBack) {
            switch action {
            case .none: break
            case .wakeUp: if let multi { _ = library.multiWakeup(multi) }
            case .signal: idle.signal()
            case .startThread:
                let thread = Thread { [self] in run() }
                thread.name = "org.conveyor.curl"
                thread.start()
            }
        }

        // MARK: - Driving (the owner only)

        private func apply(_ command: Command, to owned: inout Owned) {
            switch command {
            case .start(let transfer):
                if transfer.isCancelled {
                    transfer.complete(response: nil, error: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: transfer.url]))
                } else if let handle = owned.spare.popLast() ?? library.easyInit() {
                    add(transfer, on: handle, to: &owned)
                } else {
                    transfer.fail(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_easy_init failed"]))
                }
            case .cancel(let transfer):
                if let multi, let handle = owned.running.first(where: { $0.value === transfer })?.key {
                    owned.running.removeValue(forKey: handle)
                    _ = library.multiRemoveHandle(multi, handle)
                    recycle(handle, into: &owned)
                }
                transfer.complete(response: nil, error: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: transfer.url]))
            case .unpause(let transfer):
                if let handle = owned.running.first(where: { $0.value === transfer })?.key {
                    _ = library.easyPause(handle, CurlConstant.pauseContinue)
                }
            case .run(let work):
                work()
            }
        }

        private func add(_ transfer: CurlTransfer, on handle: Handle, to owned: inout Owned) {
            guard let multi else { return }
            if let error = transfer.configure(handle) {
                recycle(handle, into: &owned)
                transfer.fail(error)
                return
            }
            let code = library.multiAddHandle(multi, handle)
            guard code == 0 else {
                recycle(handle, into: &owned)
                transfer.fail(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_multi_add_handle failed (\(code))"]))
                return
            }
            owned.running[handle] = transfer
        }

        private func recycle(_ handle: Handle, into owned: inout Owned) {
            library.easyReset(handle)
            if owned.spare.count < 64 { owned.spare.append(handle) } else { library.easyCleanup(handle) }
        }

        /// Lets libcurl do what it can without waiting, then reports the transfers it finished.
        /// - Returns: Whether transfers are still running.
        private func process(_ owned: inout Owned) -> Bool {
            guard let multi else { return false }
            var active: Int32 = 0
            _ = library.multiPerform(multi, &active)
            var queued: Int32 = 0
            while let message = library.multiInfoRead(multi, &queued) {
                // libcurl's CURLMsg, laid out by the C shim's mirror (`conveyor_curl_message`).
                let message = message.pointee
                guard message.msg == CurlConstant.messageDone, let handle = message.easy_handle else { continue }
                let code = message.data.result
                _ = library.multiRemoveHandle(multi, handle)
                guard let transfer = owned.running.removeValue(forKey: handle) else {
                    recycle(handle, into: &owned)
                    continue
                }
                switch transfer.finish(code: code, handle: handle) {
                case .finished:
                    recycle(handle, into: &owned)
                case .resend:
                    library.easyReset(handle)
                    add(transfer, on: handle, to: &owned)
                }
            }
            return !owned.running.isEmpty
        }

        // MARK: - The loop thread

        private func run() {
            guard let multi else { return }
            while true {
                let commands = takeCommands() ?? []
                let busy = driver.running {
                    owned.withLock { owned -> Bool in
                        for command in commands { apply(command, to: &owned) }
                        return process(&owned)
                    }
                }
                if busy {
                    // Sleeps until a socket is ready or libcurl's next timer, at most a second;
                    // `curl_multi_wakeup` ends it early.
                    _ = library.multiPoll(multi, nil, 0, 1000, nil)
                    continue
                }
                let next = inbox.withLock { inbox -> (exit: Bool, wait: Bool) in
                    guard inbox.commands.isEmpty else { return (false, false) }
                    if inbox.invalidated {
                        inbox.threadRunning = false
                        inbox.invalidated = false
                        inbox.owner = .idle
                        return (true, false)
                    }
                    inbox.owner = .idle
                    return (false, true)
                }
                if next.exit { break }
                // Whoever makes the handle the loop's again (a caller handing back, `invalidate`)
                // signals once.
                if next.wait { idle.wait() }
            }
            owned.withLock { owned in
                for handle in owned.spare { library.easyCleanup(handle) }
                owned.spare.removeAll()
            }
        }
    }
#endif

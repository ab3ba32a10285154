#if os(Linux)
import Foundation
import ConveyorLocking

/// One libcurl multi handle and the thread that drives it.
///
/// Other threads only ever touch the inbox (start and cancel commands, behind one lock) and
/// `curl_multi_wakeup`, which libcurl documents as callable from any thread; everything else —
/// adding and removing easy handles, `curl_multi_perform`, the callbacks — happens on the
/// loop thread, as libcurl requires. The thread sleeps in `curl_multi_poll`, which returns
/// when a socket is ready, a libcurl timer is due, or a command arrives.
final class CurlMultiLoop: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is `inbox`, behind one Lock; `multi` is set once
    // and only passed to libcurl (from the loop thread, or to the thread-safe wakeup).

    typealias Handle = CurlLibrary.Handle

    private enum Command {
        case start(CurlTransfer)
        case cancel(CurlTransfer)
    }

    private struct Inbox {
        var commands: [Command] = []
        var threadRunning = false
        var invalidated = false
    }

    private let library: CurlLibrary
    private let multi: Handle?
    private let inbox = Lock(Inbox())

    init(library: CurlLibrary, maximumConnectionsPerHost: Int) {
        self.library = library
        multi = library.multiInit()
        if let multi {
            library.setMultiOption(multi, .pipelining, CurlConstant.pipeMultiplex)
            if maximumConnectionsPerHost > 0 { library.setMultiOption(multi, .maxHostConnections, maximumConnectionsPerHost) }
        }
    }

    deinit {
        if let multi { _ = library.multiCleanup(multi) }
    }

    /// Queues `transfer` to be added to the multi handle.
    func start(_ transfer: CurlTransfer) {
        guard multi != nil else {
            transfer.fail(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_multi_init failed"]))
            return
        }
        send(.start(transfer))
    }

    /// Stops `transfer` from any thread; its delegate hears a cancellation error, unless it
    /// had already completed.
    func cancel(_ transfer: CurlTransfer) {
        transfer.markCancelled()
        send(.cancel(transfer))
    }

    /// Lets running transfers finish, then stops the thread (a later start restarts it).
    func invalidate() {
        let running = inbox.withLock { inbox -> Bool in
            inbox.invalidated = true
            return inbox.threadRunning
        }
        if running, let multi { _ = library.multiWakeup(multi) }
    }

    private func send(_ command: Command) {
        let startThread = inbox.withLock { inbox -> Bool in
            inbox.commands.append(command)
            defer { inbox.threadRunning = true }
            return !inbox.threadRunning
        }
        if startThread {
            let thread = Thread { [self] in run() }
            thread.name = "org.conveyor.curl"
            thread.start()
        } else if let multi {
            _ = library.multiWakeup(multi)
        }
    }

    // MARK: - The loop thread

    private func run() {
        guard let multi else { return }
        // Thread-confined: the transfers in the multi handle (which keeps them alive for the
        // callbacks' unretained pointers) and easy handles kept for reuse.
        var running: [Handle: CurlTransfer] = [:]
        var spare: [Handle] = []
        var active: Int32 = 0

        func recycle(_ handle: Handle) {
            library.easyReset(handle)
            if spare.count < 64 { spare.append(handle) } else { library.easyCleanup(handle) }
        }
        func add(_ transfer: CurlTransfer, on handle: Handle) {
            if let error = transfer.configure(handle) {
                recycle(handle)
                transfer.fail(error)
                return
            }
            let code = library.multiAddHandle(multi, handle)
            guard code == 0 else {
                recycle(handle)
                transfer.fail(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_multi_add_handle failed (\(code))"]))
                return
            }
            running[handle] = transfer
        }

        while true {
            let commands = inbox.withLock { inbox -> [Command]? in
                if inbox.commands.isEmpty, running.isEmpty, inbox.invalidated {
                    inbox.threadRunning = false
                    inbox.invalidated = false
                    return nil
                }
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return inbox.commands
            }
            guard let commands else { break }
            for command in commands {
                switch command {
                case let .start(transfer):
                    if transfer.isCancelled {
                        transfer.complete(response: nil, error: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: transfer.url]))
                    } else if let handle = spare.popLast() ?? library.easyInit() {
                        add(transfer, on: handle)
                    } else {
                        transfer.fail(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_easy_init failed"]))
                    }
                case let .cancel(transfer):
                    if let handle = running.first(where: { $0.value === transfer })?.key {
                        running.removeValue(forKey: handle)
                        _ = library.multiRemoveHandle(multi, handle)
                        recycle(handle)
                    }
                    transfer.complete(response: nil, error: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: transfer.url]))
                }
            }
            _ = library.multiPerform(multi, &active)
            var queued: Int32 = 0
            while let message = library.multiInfoRead(multi, &queued) {
                // CURLMsg: { CURLMSG msg; CURL *easy_handle; union { void *; CURLcode result; } data; }
                guard message.load(as: Int32.self) == CurlConstant.messageDone,
                      let handle = message.load(fromByteOffset: 8, as: Handle?.self) else { continue }
                let code = message.load(fromByteOffset: 16, as: Int32.self)
                _ = library.multiRemoveHandle(multi, handle)
                guard let transfer = running.removeValue(forKey: handle) else {
                    recycle(handle)
                    continue
                }
                switch transfer.finish(code: code, handle: handle) {
                case .finished:
                    recycle(handle)
                case .resend:
                    library.easyReset(handle)
                    add(transfer, on: handle)
                }
            }
            // Sleeps until a socket is ready or libcurl's next timer, at most a second;
            // `curl_multi_wakeup` ends it early.
            _ = library.multiPoll(multi, nil, 0, 1000, nil)
        }
        for handle in spare { library.easyCleanup(handle) }
    }
}
#endif

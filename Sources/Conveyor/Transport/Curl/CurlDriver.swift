#if os(Linux)
import Foundation
import CConveyorCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A libcurl multi handle driven through its socket API, with the transfers in it.
///
/// Not thread-safe on purpose: a ``CurlMultiLoop`` keeps it inside a lock, and whichever thread
/// holds that lock drives libcurl — the thread that starts a request (so the request goes out
/// at once, without waking another thread) or the loop thread when a socket becomes ready.
/// libcurl's socket and timer callbacks only run inside the calls made here, so they also run
/// under that lock.
final class CurlDriver {
    typealias Handle = CurlLibrary.Handle

    let library: CurlLibrary
    let multi: Handle?
    /// The epoll instance the loop thread waits on; libcurl's sockets are registered in it
    /// by the socket callback, from whichever thread is driving.
    let epoll: Int32
    /// The transfers in the multi handle, which keeps them alive for the callbacks'
    /// unretained pointers.
    private var running: [Handle: CurlTransfer] = [:]
    /// Easy handles kept for reuse (a reset handle keeps its connection cache and DNS entries).
    private var spare: [Handle] = []
    /// When libcurl next wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`, if ever.
    private(set) var timerDeadline: DispatchTime?
    /// Until when the loop thread sleeps (set by it before it waits); a driver that leaves an
    /// earlier libcurl timer behind must wake it.
    var loopSleepsUntil: DispatchTime = .distantFuture

    var isIdle: Bool { running.isEmpty }

    init(library: CurlLibrary, epoll: Int32, maximumConnectionsPerHost: Int) {
        self.library = library
        self.epoll = epoll
        multi = library.multiInit()
        guard let multi else { return }
        library.setMultiOption(multi, .pipelining, CurlConstant.pipeMultiplex)
        if maximumConnectionsPerHost > 0 { library.setMultiOption(multi, .maxHostConnections, maximumConnectionsPerHost) }
    }

    /// Registers the callbacks; separate from `init` because they point at `self`.
    func installCallbacks() {
        guard let multi else { return }
        let me = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        library.setMultiOption(multi, .socketFunction, function: unsafeBitCast(curlSocketCallback, to: UnsafeRawPointer.self))
        library.setMultiOption(multi, .socketData, pointer: me)
        library.setMultiOption(multi, .timerFunction, function: unsafeBitCast(curlTimerCallback, to: UnsafeRawPointer.self))
        library.setMultiOption(multi, .timerData, pointer: me)
    }

    deinit {
        if let multi {
            // No callback may reach an object being destroyed.
            library.setMultiOption(multi, .socketFunction, function: nil)
            library.setMultiOption(multi, .timerFunction, function: nil)
            for handle in running.keys { _ = library.multiRemoveHandle(multi, handle) }
            _ = library.multiCleanup(multi)
        }
        for handle in running.keys { library.easyCleanup(handle) }
        for handle in spare { library.easyCleanup(handle) }
    }

    // MARK: - Commands

    /// Adds `transfer` to the multi handle and lets libcurl send what it can right away.
    func start(_ transfer: CurlTransfer) {
        guard let multi else {
            transfer.fail(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_multi_init failed"]))
            return
        }
        if transfer.isCancelled {
            transfer.complete(response: nil, error: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: transfer.url]))
        } else if let handle = spare.popLast() ?? library.easyInit() {
            add(transfer, on: handle, multi: multi)
        } else {
            transfer.fail(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_easy_init failed"]))
        }
    }

    /// Takes `transfer` out of the multi handle; its delegate hears a cancellation error unless
    /// it had already completed.
    func cancel(_ transfer: CurlTransfer) {
        if let multi, let handle = running.first(where: { $0.value === transfer })?.key {
            running.removeValue(forKey: handle)
            _ = library.multiRemoveHandle(multi, handle)
            recycle(handle)
        }
        transfer.complete(response: nil, error: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: transfer.url]))
    }

    // MARK: - Driving

    /// Tells libcurl what happened on `socket` (`CURL_CSELECT_*` bits), then reports what ended.
    func socketReady(_ socket: Int32, events: Int32) {
        act(socket: socket, events: events)
    }

    /// Runs libcurl's timer while it is due (adding a handle sets it to "now"), then reports
    /// what ended.
    func runDueTimers() {
        var rounds = 0
        while let deadline = timerDeadline, deadline <= .now(), rounds < 16 {
            timerDeadline = nil
            act(socket: CurlConstant.socketTimeout, events: 0)
            rounds += 1
        }
    }

    private func act(socket: Int32, events: Int32) {
        guard let multi else { return }
        var active: Int32 = 0
        _ = library.multiSocketAction(multi, socket, events, &active)
        collectFinished(multi: multi)
    }

    private func collectFinished(multi: Handle) {
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
                add(transfer, on: handle, multi: multi)
            }
        }
    }

    private func add(_ transfer: CurlTransfer, on handle: Handle, multi: Handle) {
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

    private func recycle(_ handle: Handle) {
        library.easyReset(handle)
        if spare.count < 64 { spare.append(handle) } else { library.easyCleanup(handle) }
    }

    // MARK: - libcurl's callbacks

    /// libcurl wants `socket` watched for `what` (`CURL_POLL_*`), or no longer watched.
    fileprivate func watch(_ socket: Int32, what: Int32) {
        if what == CurlConstant.pollRemove {
            _ = epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil)
            return
        }
        var event = epoll_event()
        var mask: UInt32 = 0
        if what & CurlConstant.pollIn != 0 { mask |= EPOLLIN.rawValue }
        if what & CurlConstant.pollOut != 0 { mask |= EPOLLOUT.rawValue }
        event.events = mask
        event.data.fd = socket
        // A socket seen before is modified; a new one (or a reused descriptor number) added.
        if epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event) != 0, errno == ENOENT {
            _ = epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event)
        }
    }

    /// libcurl wants to be called in `milliseconds` (0: at once; -1: no timer).
    fileprivate func setTimer(milliseconds: Int) {
        timerDeadline = milliseconds < 0 ? nil : .now() + .milliseconds(milliseconds)
    }
}

// C functions that find the driver through their user-data pointer (unretained: the driver
// unregisters them before it goes away).

private let curlSocketCallback: @convention(c) (UnsafeMutableRawPointer?, Int32, Int32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Int32 = {
    _, socket, what, userData, _ in
    guard let userData else { return -1 }
    Unmanaged<CurlDriver>.fromOpaque(userData).takeUnretainedValue().watch(socket, what: what)
    return 0
}

private let curlTimerCallback: @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeMutableRawPointer?) -> Int32 = { _, milliseconds, userData in
    guard let userData else { return -1 }
    Unmanaged<CurlDriver>.fromOpaque(userData).takeUnretainedValue().setTimer(milliseconds: milliseconds)
    return 0
}
#endif

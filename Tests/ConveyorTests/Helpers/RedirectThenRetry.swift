import ConveyorLocking
import ConveyorTesting
import Foundation

extension LocalHTTPServer {
    /// `/start` redirects (302) to `/flaky`, which answers its first request with a 503
    /// (`Retry-After: 0`) and every later one with "ok": one request, three attempts — the
    /// first, the redirect's target, and a retry.
    func routeRedirectThenRetry() {
        let refused = Lock(false)
        route("/start") { _ in .init(status: 302, headers: ["Location": "/flaky"]) }
        route("/flaky") { _ in
            let first = refused.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            return first ? .init(status: 503, headers: ["Retry-After": "0"]) : .text("ok")
        }
    }
}

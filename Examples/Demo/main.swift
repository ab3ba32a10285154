import Conveyor
import ConveyorTesting
import Foundation

let server = try LocalHTTPServer.started()
let client = HTTPClient(baseURL: server.baseURL)
client.setAuthorizationHeader(username: "user", password: "passwd")
let done = DispatchSemaphore(value: 0)
client.get("get", parameters: ["q": "swift", "n": [1, 2]], success: { op, body in
    print("success", op.response!.statusCode, op.responseString ?? "")
    done.signal()
}, failure: { op, error in print("failure", error); done.signal() })
done.wait()
for path in ["basic-auth/user/passwd", "basic-auth/user/wrong", "status/404", "redirect/3", "fault/reset", "fault/close-mid-body", "fault/malformed-status-line", "fault/lying-content-length"] {
    let start = Date()
    do {
        let r = try await client.response(method: .get, path: path)
        print(path, "->", r.statusCode, r.metrics.redirectCount, String(format: "%.3f", Date().timeIntervalSince(start)))
    } catch {
        print(path, "-> error", error, String(format: "%.3f", Date().timeIntervalSince(start)))
    }
}
client.clearAuthorizationHeader()
for cred in [nil, URLCredential(user: "user", password: "passwd", persistence: .none), URLCredential(user: "user", password: "x", persistence: .none)] {
    client.defaultCredential = cred
    let start = Date()
    do { let r = try await client.response(method: .get, path: "basic-auth/user/passwd"); print("cred", r.statusCode) }
    catch { print("cred error", error, Date().timeIntervalSince(start)) }
}
var config = HTTPClient.Configuration(); config.timeout = 0.5
let c2 = HTTPClient(baseURL: server.baseURL, configuration: config)
let s = Date()
do { _ = try await c2.get("fault/stall-after-headers") } catch { print(error, Date().timeIntervalSince(s)) }
let t = Task { try await client.get("delay/5") }
try await Task.sleep(for: .milliseconds(200))
t.cancel()
do { _ = try await t.value } catch { print("cancelled:", error) }
server.stop()

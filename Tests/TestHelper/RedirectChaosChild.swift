import Conveyor
import Foundation
import Synchronization

/// `redirect-chaos <base-url> <transport> <iterations>`: GETs `redirect/2` again and again and,
/// at a random moment of each, pauses and resumes it or cancels it, from another thread. Prints
/// `done N` once every operation has completed exactly once; `missing completion I` (exit 3)
/// when one did not within 10 s. corelibs trapped here ("Received callback for HTTP
/// redirection, but we're not waiting for it") before cancels went through the delegate queue.
func redirectChaosChild(arguments: [String]) -> Never {
    let baseURL = URL(string: arguments[0])!
    let iterations = Int(arguments[2]) ?? 200
    var configuration = HTTPClient.Configuration()
    configuration.transport = arguments[1] == "urlsession" ? .urlSession : .curl
    configuration.cache = nil
    configuration.monitorsReachability = false
    let client = HTTPClient(baseURL: baseURL, configuration: configuration)
    for iteration in 0..<iterations {
        let completions = DispatchSemaphore(value: 0)
        let calls = Counter()
        let request = try! client.request(method: .get, path: "redirect/2")
        let operation = client.operation(
            HTTPRequestOperation.self, with: request,
            success: { _, _ in
                calls.increment()
                completions.signal()
            },
            failure: { _, _ in
                calls.increment()
                completions.signal()
            })
        client.enqueue(operation)
        let cancels = iteration % 3 == 0
        DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int.random(in: 0...8000))) {
            if cancels {
                operation.cancel()
            } else {
                operation.pause()
                operation.resume()
            }
        }
        // 60 s only ends a hang (an iteration takes milliseconds; the parent's watchdog is 120 s).
        guard completions.wait(timeout: .now() + 60) == .success else {
            say("missing completion \(iteration)")
            exit(3)
        }
        guard calls.value == 1 else {
            say("\(calls.value) completions in iteration \(iteration)")
            exit(4)
        }
    }
    say("done \(iterations)")
    exit(0)
}

/// A thread-safe count.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

import Conveyor
import Foundation

/// `outbox <base-url> <directory> <count> <curl|urlsession> <body-bytes>`: opens the outbox in
/// <directory>, prints `result <id> <status|failed> <redelivery 0|1>` for each result, sends
/// <count> JSON POSTs to `apply` (printing `accepted <id>` as each `send` returns, `answered`
/// whenever an operation finishes), then closes the outbox, prints `idle` and exits 0 once
/// nothing is pending.
/// The crash tests kill it with SIGKILL anywhere in between and run it again with count 0.
func outboxChild(arguments: [String]) -> Never {
    guard arguments.count == 5, let baseURL = URL(string: arguments[0]), let count = Int(arguments[2]), let bodyBytes = Int(arguments[4])
    else {
        say("usage: outbox <base-url> <directory> <count> <curl|urlsession> <body-bytes>")
        exit(2)
    }
    var configuration = HTTPClient.Configuration.default
    configuration.transport = arguments[3] == "urlsession" ? .urlSession : .curl
    configuration.monitorsReachability = false
    configuration.cache = nil
    let client = HTTPClient(baseURL: baseURL, configuration: configuration)
    // Which process sent each request: the crash test allows a key again only after the
    // process that sent it before was killed. (Default headers are applied at delivery.)
    client.setDefaultHeader("X-Outbox-Process", value: "\(getpid())")
    var settings = Outbox.Configuration.default
    settings.baseDelay = 0.02
    settings.maximumDelay = 0.1
    let outbox: Outbox
    do {
        outbox = try client.outbox(directory: URL(fileURLWithPath: arguments[1]), configuration: settings)
    } catch {
        say("error \(error)")
        exit(2)
    }
    let observer = NotificationCenter.default.addObserver(forName: .conveyorOperationDidFinish, object: nil, queue: nil) { _ in
        say("answered")
    }
    outbox.setResultHandler { result in
        let redelivery = result.isRedelivery ? 1 : 0
        switch result.outcome {
        case .succeeded(let response): say("result \(result.id.uuidString) \(response.statusCode) \(redelivery)")
        case .failed(let error), .deadLettered(let error): say("result \(result.id.uuidString) failed \(redelivery) \(error)")
        }
    }
    struct Payload: Encodable {
        let index: Int
        let pad: String
    }
    for index in 0..<count {
        do {
            let id = try outbox.sendSynchronously(
                method: .post, path: "apply", body: Payload(index: index, pad: String(repeating: "x", count: bodyBytes)),
                requestSerializer: .json)
            say("accepted \(id.uuidString)")
        } catch {
            say("error \(error)")
            exit(3)
        }
    }
    say("sent")
    // Polling in the child is fine: the parent synchronises on the lines printed.
    while outbox.pendingCount > 0 { usleep(2_000) }
    // The count drops as each result is handed over; the files go just after, and `close()`
    // waits for that: exiting without it would leave them for a flagged redelivery.
    outbox.close()
    say("idle")
    _ = observer
    exit(0)
}

/// `outbox-retry-dead <directory>`: opens the outbox in <directory> without a consumer (nothing
/// is sent), and for each dead letter prints `retrying <id>`, calls `retryDeadLetter`, and
/// prints `retried <id>`; then `done`, exit 0. The crash tests kill it with SIGKILL in between.
func outboxRetryDeadChild(arguments: [String]) -> Never {
    guard arguments.count == 1 else {
        say("usage: outbox-retry-dead <directory>")
        exit(2)
    }
    var configuration = HTTPClient.Configuration.default
    configuration.monitorsReachability = false
    configuration.cache = nil
    let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!, configuration: configuration)
    do {
        let outbox = try client.outbox(directory: URL(fileURLWithPath: arguments[0]))
        for letter in try outbox.deadLetters() {
            say("retrying \(letter.id.uuidString)")
            try outbox.retryDeadLetter(letter.id)
            say("retried \(letter.id.uuidString)")
        }
    } catch {
        say("error \(error)")
        exit(3)
    }
    say("done")
    exit(0)
}

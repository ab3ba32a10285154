import Conveyor
import ConveyorTesting
import Foundation
import Synchronization

// OutboxExample: comments written to a durable outbox survive the app stopping before they were
// sent. The first "run" queues three comments and closes its outbox without sending anything (the
// app was swiped away); the second opens the same directory, the server answers 503 twice (a
// maintenance window, with Retry-After), and the comments go in order, each applied once by a
// server that honours Idempotency-Key. The outbox's directory is empty at the end.
//
//   swift run OutboxExample [--directory DIR]

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print(
        """
        USAGE: OutboxExample [--directory DIR]

        Queues three comments in a durable outbox in DIR (default: a new temporary directory),
        stops before sending them, reopens the outbox as a restarted app would, and delivers them
        in order to an embedded server that is in maintenance (503) for its first two requests.
        """)
    exit(0)
}

struct Comment: Codable, Sendable {
    let text: String
}

let directory: URL
if let index = CommandLine.arguments.firstIndex(of: "--directory"), index + 1 < CommandLine.arguments.count {
    directory = URL(fileURLWithPath: CommandLine.arguments[index + 1])
} else {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-outbox-example-\(UUID().uuidString)")
}

let server = try LocalHTTPServer.started()
let comments = CommentStore()
server.route("/comments", method: "POST") { request in
    comments.receive(request)
}

func makeClient() -> HTTPClient {
    var configuration = HTTPClient.Configuration.default
    configuration.monitorsReachability = false
    return HTTPClient(baseURL: server.baseURL, configuration: configuration)
}

// Run 1: accepted means on disk; nothing is sent before a result consumer is registered.
do {
    let outbox = try makeClient().outbox(directory: directory)
    for text in ["On the train", "Tunnel ahead", "Back online?"] {
        let id = try await outbox.send(method: .post, path: "comments", body: Comment(text: text), requestSerializer: .json)
        print("accepted \"\(text)\" as \(id.uuidString.prefix(8))")
    }
    print(
        "the app stops with \(outbox.pendingCount) comments waiting on disk; the server has seen \(server.receivedRequests.count) requests")
    outbox.close()
}

// Run 2: the same directory, a new process as far as the outbox can tell.
var settings = Outbox.Configuration.default
settings.baseDelay = 0.1
let outbox = try makeClient().outbox(directory: directory, configuration: settings)
print("restarted: \(outbox.pendingCount) comments waiting")
var delivered = 0
var reported = 0
for await result in outbox.results {
    reported += 1
    switch result.outcome {
    case .succeeded(let response):
        delivered += 1
        print("delivered \(result.id.uuidString.prefix(8)): \(response.statusCode) after \(result.item?.attempts ?? 0) failed attempts")
    case .failed(let error), .deadLettered(let error):
        print("failed \(result.id.uuidString.prefix(8)): \(error)")
    }
    if reported == 3 { break }
}
outbox.close()
let left = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("items").path)) ?? []
print("server applied \(comments.applied.count) comments in order: \(comments.applied.map { "\"\($0)\"" }.joined(separator: ", "))")
print("\(comments.requests) requests for \(comments.applied.count) comments; files left in the outbox: \(left.count)")
server.stop()
exit(delivered == 3 && left.isEmpty ? 0 : 1)

/// A comments endpoint in maintenance for its first two requests, then applying each
/// Idempotency-Key once (a repeat gets the first answer again).
final class CommentStore: Sendable {
    private let state = Mutex<(requests: Int, keys: Set<String>, applied: [String])>((0, [], []))

    func receive(_ request: LocalHTTPServer.Request) -> LocalHTTPServer.Response {
        state.withLock { state in
            state.requests += 1
            if state.requests <= 2 { return .init(status: 503, headers: ["Retry-After": "0"]) }
            guard let key = request.headers["Idempotency-Key"] else { return .text("no key", status: 400) }
            if !state.keys.contains(key), let comment = try? JSONDecoder().decode(Comment.self, from: request.body) {
                state.keys.insert(key)
                state.applied.append(comment.text)
            }
            return .json(["status": "applied"], status: 201)
        }
    }

    var applied: [String] { state.withLock { $0.applied } }
    var requests: Int { state.withLock { $0.requests } }
}

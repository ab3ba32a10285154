import Conveyor
import ConveyorTesting
import Foundation
import Synchronization

// ServerSentEventsExample: follows a Server-Sent Events endpoint of an embedded LocalHTTPServer
// and prints each event as it arrives. The server drops the connection once in the middle of
// an event; the follower reconnects after the server's `retry`, sending `Last-Event-ID`, and
// stops when the server answers 204.
//
//   swift run ServerSentEventsExample

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print(
        """
        USAGE: ServerSentEventsExample

        Follows a Server-Sent Events endpoint of an embedded server through a dropped connection
        (reconnecting after the server's retry, with Last-Event-ID) until it answers 204.
        """)
    exit(0)
}

struct Dropped: Error {}

let server = try LocalHTTPServer.started()
let connections = ConnectionCounter()
server.route("/events") { request in
    let number = connections.next()
    let headers: HTTPHeaders = ["Content-Type": "text/event-stream"]
    switch number {
    case 1:
        return .init(
            headers: headers,
            body: .stream(chunked: true) { writer in
                try writer.write(Data("retry: 100\n\n".utf8))
                for id in 1...3 {
                    try writer.write(Data("id: \(id)\nevent: tick\ndata: tick \(id)\n\n".utf8))
                    writer.pause(0.05)
                }
                try writer.write(Data("id: 4\ndata: cut off".utf8))
                throw Dropped()  // the connection drops in the middle of event 4
            })
    case 2:
        let resumed = request.headers["Last-Event-ID"] ?? "none"
        return .init(
            headers: headers,
            body: .stream(chunked: true) { writer in
                try writer.write(Data("id: 4\ndata: resumed after \(resumed)\ndata: on two lines\n\n".utf8))
            })
    default:
        return .init(status: 204)  // no more events
    }
}

let client = HTTPClient(baseURL: server.baseURL)
var count = 0
do {
    for try await event in client.serverSentEvents("events") {
        count += 1
        print("event \(event.id ?? "-") [\(event.type)]: \(event.data.replacingOccurrences(of: "\n", with: " / "))")
    }
    print("\(count) events over \(connections.count) connections; the server said 204")
} catch {
    print("failed: \(error)")
    exit(1)
}
server.stop()

/// Counts the connections the route saw.
final class ConnectionCounter: Sendable {
    private let value = Mutex(0)
    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
    var count: Int { value.withLock { $0 } }
}

import ConveyorTesting
import Foundation
import Synchronization

/// The embedded file service the example talks to when no `--base-url` is given: it keeps
/// uploaded files in memory and serves them back, and drops the first download of each file
/// halfway through, so the client's resume can be seen.
enum FileService {
    /// The paths whose first download was already cut.
    final class Interrupted: Sendable {
        let paths = Mutex<Set<String>>([])
    }

    static func start() throws -> LocalHTTPServer {
        let server = LocalHTTPServer()
        server.maximumStoredBodySize = 64 << 20
        let interrupted = Interrupted()
        server.route("/upload", method: "POST") { [server] request in
            guard let parts = try? request.multipartParts() else { return .text("not a multipart body\n", status: 400) }
            var stored: [[String: Any]] = []
            for part in parts {
                guard let name = part.fileName else { continue }
                serve(part.body, at: "/files/\(name)", on: server, interrupted: interrupted)
                stored.append(["name": name, "size": part.body.count])
            }
            return .json(stored)
        }
        try server.start()
        return server
    }

    /// Serves `data` at `path`, resumable, dropping the connection halfway the first time.
    private static func serve(_ data: Data, at path: String, on server: LocalHTTPServer, interrupted: Interrupted) {
        let etag = "\"\(data.count)-\(UUID().uuidString.prefix(8))\""
        server.route(path) { request in
            let first = interrupted.paths.withLock { $0.insert(path).inserted }
            guard first, request.headers["Range"] == nil else { return .ranged(data, etag: etag, for: request) }
            struct Dropped: Error {}
            return .init(
                headers: ["ETag": etag, "Content-Length": String(data.count), "Accept-Ranges": "bytes"],
                body: .stream(chunked: false) { writer in
                    try writer.write(data.prefix(data.count / 2))
                    throw Dropped()  // the connection closes mid-body
                })
        }
    }
}

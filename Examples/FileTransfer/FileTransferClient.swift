import Conveyor
import Foundation

/// A client for a file service: `POST /upload` takes a multipart form of files, `GET
/// /files/{name}` serves one back (with `Range` support, so an interrupted download continues).
final class FileTransferClient: HTTPClient, @unchecked Sendable {
    // @unchecked Sendable: adds no stored state; HTTPClient keeps its own behind one Mutex.

    /// What the service says it stored.
    struct Stored: Decodable, Sendable {
        let name: String
        let size: Int
    }

    override init(baseURL: URL, configuration: HTTPClient.Configuration = .default) {
        var configuration = configuration
        // A dropped connection is retried; a download continues from the bytes it has.
        configuration.retryPolicy = RetryPolicy(maximumAttempts: 3, baseDelay: 0.1, maximumDelay: 0.5)
        configuration.idleTimeout = 15
        // Bodies above 1 MB are written to a temporary file and uploaded from it, not held in memory.
        configuration.multipartMemoryThreshold = 1_000_000
        super.init(baseURL: baseURL, configuration: configuration)
    }

    /// Uploads every regular file in `directory` as one multipart request, streamed from disk.
    /// - Parameter progress: Called with the bytes sent and the total.
    func upload(directory: URL, progress: @escaping @Sendable (Int64, Int64) -> Void) async throws -> [Stored] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let data = try await post(
            "upload",
            constructingBody: { form in
                for file in files { try form.append(fileURL: file, name: "files") }
            }, uploadProgress: { _, sent, total in progress(sent, total) })
        return try JSONDecoder().decode([Stored].self, from: data)
    }

    /// Downloads `name` into `directory`; returns the file and how many attempts it took.
    func download(_ name: String, into directory: URL) async throws -> (file: URL, attempts: Int) {
        let request = try request(method: .get, path: "files/\(name)")
        return try await withCheckedThrowingContinuation { continuation in
            let operation = FileDownloadOperation(
                request: request, destination: .directory(directory),
                options: [.createIntermediateDirectories, .removePreviousFile])
            operation.retryPolicy = configuration.retryPolicy
            operation.cache = nil  // large files: nothing to gain from the HTTP cache
            operation.setCompletionBlock(
                success: { operation, _ in
                    let download = operation as! FileDownloadOperation
                    continuation.resume(returning: (download.destinationURL!, download.metrics?.attemptCount ?? 1))
                },
                failure: { _, error in
                    continuation.resume(throwing: error)
                })
            enqueue(operation)
        }
    }
}

import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Remembers which request body streams are really files on disk, so operations can upload
/// them with `uploadTask(fromFile:)`: on Linux a stream body is always sent chunked (servers
/// that need Content-Length refuse it), while a file is sent with its exact length.
///
/// `multipartRequest` returns a plain `URLRequest` (as AFNetworking did) whose
/// `httpBodyStream` reads the body file; this table maps that stream back to the file. Copies
/// of a `URLRequest` share the same stream object, so the mapping survives them.
final class UploadBodyFiles: Sendable {
    static let shared = UploadBodyFiles()

    struct Entry {
        let file: URL
        /// Conveyor created the file and removes it when the operation ends.
        let isTemporary: Bool
        /// Upload the file itself (false: the stream is sent, as for a throttled body).
        let uploadsFromFile: Bool
    }

    private let entries = Lock<[ObjectIdentifier: (stream: UncheckedSendableBox<InputStream>, entry: Entry)]>([:])

    func register(_ stream: InputStream, file: URL, isTemporary: Bool, uploadsFromFile: Bool = true) {
        // The stream itself is kept so its identifier cannot be reused while registered.
        let entry = Entry(file: file, isTemporary: isTemporary, uploadsFromFile: uploadsFromFile)
        entries.withLock { $0[ObjectIdentifier(stream)] = (UncheckedSendableBox(value: stream), entry) }
    }

    func entry(for request: URLRequest) -> Entry? {
        guard let stream = request.httpBodyStream else { return nil }
        return entries.withLock { $0[ObjectIdentifier(stream)]?.entry }
    }

    /// Forgets the request's body file and removes it if Conveyor created it.
    func finish(_ request: URLRequest) {
        guard let stream = request.httpBodyStream else { return }
        let entry = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(stream))?.entry }
        if let entry, entry.isTemporary { try? FileManager.default.removeItem(at: entry.file) }
    }
}

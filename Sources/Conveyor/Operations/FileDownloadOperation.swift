import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An operation that streams the response body into a file as it arrives; the bytes never
/// accumulate in memory. Succeeds with the destination file's URL.
///
/// The body is written to a partial file beside the destination (so the final move is an
/// atomic rename on the same file system) and moved into place only after a successful,
/// validated response. Error responses stay in memory, so their body is in the error. Any
/// failure (a full disk, a dropped connection, cancellation) removes the partial file.
///
/// Every way to make a download — ``init(request:)``, ``init(request:destination:options:)``,
/// ``HTTPClient/download(_:parameters:headers:to:options:progress:success:failure:)`` and its async
/// form — uses the same defaults: ``Options/default`` (missing directories are created, an
/// existing file is never replaced), and for ``init(request:)``, a new directory of its own
/// inside the temporary directory, so downloads of the same name never collide.
open class FileDownloadOperation: HTTPRequestOperation, @unchecked Sendable {
    // @unchecked Sendable: its one mutable property is kept behind `settings`, a Mutex; the
    // rest lives in the base class's Mutex.

    /// Where the file goes.
    public enum Destination: Sendable {
        /// Into a directory, named from `Content-Disposition`'s file name, else the URL's last
        /// path component, else `download` (names are reduced to one safe path component).
        case directory(URL)
        /// To exactly this file.
        case file(URL)
        /// Decided from the response: called with the response and the suggested file name.
        case custom(@Sendable (HTTPResponseHead, String) -> URL)
    }

    /// How the destination is prepared.
    public struct Options: OptionSet, Sendable {
        /// The raw value.
        public let rawValue: Int
        /// Creates options from a raw value.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Replace a regular file that already exists at the destination (otherwise:
        /// `destinationExists`). A directory or symbolic link there is never removed: the
        /// download fails with `destinationExists`.
        public static let removePreviousFile = Options(rawValue: 1 << 0)
        /// Create missing directories on the way to the destination.
        public static let createIntermediateDirectories = Options(rawValue: 1 << 1)
        /// The defaults of every initializer and of ``HTTPClient``'s `download` calls:
        /// `[.createIntermediateDirectories]` — directories are created, nothing is replaced.
        public static let `default`: Options = [.createIntermediateDirectories]
    }

    private struct Settings {
        var destination: Destination
        var options: Options
        var target: URL?
        /// The directory ``init(request:)`` chose in the temporary directory: removed, when
        /// empty, after a download into it fails.
        var ownDirectory: URL?
    }
    private let settings: Lock<Settings>

    /// Creates a download into a new directory of its own inside the temporary directory
    /// (``destinationURL`` says where the file went), with ``Options/default``.
    /// - Parameter request: The request.
    public required init(request: URLRequest) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("Conveyor-\(UUID().uuidString)", isDirectory: true)
        settings = Lock(Settings(destination: .directory(directory), options: .default, ownDirectory: directory))
        super.init(request: request)
        acceptableContentTypes = ["*/*"]
    }

    /// Creates a download.
    /// - Parameters:
    ///   - request: The request.
    ///   - destination: Where the file goes.
    ///   - options: How the destination is prepared; default ``Options/default``.
    public convenience init(request: URLRequest, destination: Destination, options: Options = .default) {
        self.init(request: request)
        setting(\.destination, destination)
        setting(\.options, options)
    }

    /// What a paused download needs to continue in another run of the program: persist it
    /// (it is `Codable`) and pass it to ``init(request:resuming:destination:options:)``.
    public struct ResumeState: Codable, Sendable, Equatable {
        /// The URL being downloaded.
        public let url: URL
        /// The `ETag` or `Last-Modified` sent as `If-Range`.
        public let validator: String
        /// Bytes already in the partial file.
        public let bytesReceived: Int64
        /// The partial file (beside the destination).
        public let partialFile: URL
        /// The whole file's size as the server announced it, when it did: a 206 of another total
        /// is not the rest of this file. Nil in states saved before it was recorded.
        public let totalBytes: Int64?
    }

    /// The state to persist for continuing this download later; nil unless it is paused with
    /// bytes a server can continue from (the response had an `ETag` or `Last-Modified`).
    public var resumeState: ResumeState? {
        transfer { machine in
            guard let point = machine.resumePoint, let url = machine.currentRequest.url else { return nil }
            return ResumeState(
                url: url, validator: point.validator, bytesReceived: point.offset, partialFile: point.file.url,
                totalBytes: point.total >= 0 ? point.total : nil)
        }
    }

    /// Creates a download that continues from a ``ResumeState`` saved by an earlier run: it asks
    /// for the rest with `Range`/`If-Range`, appends on a 206 that continues the partial file,
    /// starts over on a 200 — and on any other 206, sending the request again without `Range`.
    /// - Parameters:
    ///   - request: The request (for the same URL).
    ///   - saved: The saved state; ignored when its partial file is missing or of another size.
    ///   - destination: Where the file goes.
    ///   - options: How the destination is prepared; default ``Options/default``.
    public convenience init(request: URLRequest, resuming saved: ResumeState, destination: Destination, options: Options = .default) {
        self.init(request: request, destination: destination, options: options)
        let size = (try? FileManager.default.attributesOfItem(atPath: saved.partialFile.path)[.size] as? NSNumber)?.int64Value
        guard size == saved.bytesReceived, let file = try? ResponseBodyFile(url: saved.partialFile, appending: true) else { return }
        try? file.close()
        transfer {
            $0.continues(saved: saved.bytesReceived, validator: saved.validator, total: saved.totalBytes ?? -1, file: file)
        }
    }

    /// Where the file goes.
    public var destination: Destination {
        get { setting(\.destination) }
        set { setting(\.destination, newValue) }
    }

    /// How the destination is prepared.
    public var options: Options {
        get { setting(\.options) }
        set { setting(\.options, newValue) }
    }

    private func setting<Value: Sendable>(_ path: any KeyPath<Settings, Value> & Sendable) -> Value {
        settings.withLock { $0[keyPath: path] }
    }

    private func setting<Value: Sendable>(_ path: any WritableKeyPath<Settings, Value> & Sendable, _ value: Value) {
        settings.withLock { $0[keyPath: path] = value }
    }

    /// Never chosen by a client's registration: downloads are asked for explicitly.
    open override class func canProcess(_ request: URLRequest) -> Bool { false }

    /// The downloaded file; nil until the operation succeeded.
    public var destinationURL: URL? { responseObject as? URL }

    // MARK: - Cleaning up

    override func transferFailed() {
        // The directory this operation chose for itself is nobody else's: an empty one goes too
        // (found by the independent attack: one per failed download stayed in the temporary directory).
        guard let own = setting(\.ownDirectory), case .directory(let directory) = setting(\.destination), directory == own,
            (try? FileManager.default.contentsOfDirectory(atPath: own.path))?.isEmpty == true
        else { return }
        try? FileManager.default.removeItem(at: own)
    }

    override func successNotDelivered(_ value: Any?) {
        // Moved into place while a cancel (or timeout) claimed the completion: the caller was
        // told the download failed, so the file is not left where the next download would find it.
        if let file = value as? URL, file == setting(\.target) { try? FileManager.default.removeItem(at: file) }
        transferFailed()
    }

    // MARK: - Streaming to the file

    override func makeBodyFile(for response: HTTPResponseHead, appendingTo partialFile: URL?, stores: Bool) throws -> ResponseBodyFile? {
        guard stores else { return nil }
        let (destination, options) = (setting(\.destination), setting(\.options))
        let target = Self.target(for: destination, response: response)
        let directory = target.deletingLastPathComponent()
        if options.contains(.createIntermediateDirectories) {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw ConveyorError.downloadFailed(reason: .cannotCreateFile(directory, error))
            }
        }
        // Checked before a byte is read, and again before the move (the disk may change meanwhile).
        if !Self.mayWrite(to: target, options: options) { throw ConveyorError.downloadFailed(reason: .destinationExists(target)) }
        setting(\.target, target)
        if let partialFile { return try ResponseBodyFile(url: partialFile, appending: true) }
        return try ResponseBodyFile(
            url: directory.appendingPathComponent(".\(target.lastPathComponent).conveyor-partial-\(UUID().uuidString)"))
    }

    override func serializeResponse(
        request: URLRequest, response: HTTPResponseHead, data: Data, bodiless: Bool, serializer: any ResponseSerializer
    ) throws -> Any? {
        let (file, target, options) = (transfer { $0.bodyFile }, setting(\.target), options)
        guard let file, let target else {
            // No body file was opened (an empty 204): write what arrived so the caller still gets a file.
            let target = Self.target(for: destination, response: response)
            do { try data.write(to: target) } catch { throw ConveyorError.downloadFailed(reason: .writeFailed(target, error)) }
            return target
        }
        try file.close()
        guard Self.mayWrite(to: target, options: options) else {
            file.discard()
            throw ConveyorError.downloadFailed(reason: .destinationExists(target))
        }
        do {
            if options.contains(.removePreviousFile), Self.existingItemType(at: target) == .typeRegular {
                try FileManager.default.removeItem(at: target)
            }
            try FileManager.default.moveItem(at: file.url, to: target)
        } catch {
            file.discard()
            throw ConveyorError.downloadFailed(reason: .cannotMoveFile(to: target, error))
        }
        return target
    }

    /// Whether the download may end at `target`: nothing is there, or a regular file that
    /// `.removePreviousFile` allows replacing. Never a directory or a symbolic link.
    static func mayWrite(to target: URL, options: Options) -> Bool {
        guard let type = existingItemType(at: target) else { return true }
        return type == .typeRegular && options.contains(.removePreviousFile)
    }

    /// The type of what is at `url` without following a symbolic link; nil when nothing is.
    static func existingItemType(at url: URL) -> FileAttributeType? {
        // attributesOfItem uses lstat: a link is reported as a link, even a dangling one.
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.type] as? FileAttributeType
    }

    static func target(for destination: Destination, response: HTTPResponseHead) -> URL {
        let name = suggestedFileName(for: response)
        switch destination {
        case .directory(let directory): return directory.appendingPathComponent(name)
        case .file(let url): return url
        case .custom(let decide): return decide(response, name)
        }
    }

    /// The file name from `Content-Disposition` (`filename*=UTF-8''…` preferred), else the
    /// URL's last path component, reduced to one path component with no `..` so a server cannot
    /// write outside the chosen directory.
    static func suggestedFileName(for response: HTTPResponseHead) -> String {
        var candidate: String?
        if let disposition = response.value(forHTTPHeaderField: "Content-Disposition") {
            var plain: String?
            var extended: String?
            for item in disposition.split(separator: ";").dropFirst() {
                let pair = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2 else { continue }
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                switch pair[0].lowercased() {
                case "filename*":
                    // RFC 8187: charset'language'percent-encoded
                    let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                    extended = parts.count == 3 ? String(parts[2]).removingPercentEncoding : nil
                case "filename": plain = value
                default: break
                }
            }
            candidate = extended ?? plain
        }
        if candidate == nil || candidate!.isEmpty { candidate = response.url.lastPathComponent }
        let safe = (candidate ?? "").replacingOccurrences(of: "\\", with: "/").split(separator: "/").last.map(String.init) ?? ""
        return safe.isEmpty || safe == "." || safe == ".." ? "download" : safe
    }
}

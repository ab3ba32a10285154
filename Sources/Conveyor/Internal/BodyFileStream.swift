import Foundation

/// The `httpBodyStream` of a request whose body is a file: Conveyor's transports find the file
/// through it (``snapshot``) and send the file itself with its exact length, and anything else
/// that reads the stream — a `URLSession` given the request, a caller — reads the file from
/// disk, a piece at a time: the announced length and no more, failing (`streamStatus`
/// `.error`) when the file is not the one the request was built with.
///
/// Made instead of `InputStream(url:)`, which turns the URL into a CoreFoundation URL by parsing
/// its text again: 13–22 µs for every request built (`conveyor-bench --profile "… file upload"`
/// showed it as 4 % of the client's CPU), against well under 1 µs for this stream. Nothing is
/// opened until `open()`. Opened again after it was read, it starts over from the first byte
/// (corelibs reads the same stream again when it answers an authentication challenge).
final class BodyFileStream: InputStream, TemporaryBodyFileOwner {
    // Not Sendable: like any InputStream, it is read by one reader at a time.

    /// The file and what it was when the request was built.
    let snapshot: BodyFile.Snapshot
    /// The file, when Conveyor wrote it and removes it.
    let temporaryFile: TemporaryBodyFile?
    /// The file a transport opened for this stream, which every opening reads from the start:
    /// its failures are the ones the transport reports.
    private var preopened: OpenBodyFile?
    private var cursor: BodyFileCursor?
    private var status: Stream.Status = .notOpen
    private var failure: (any Error)?

    /// The file the body is read from.
    var fileURL: URL { snapshot.url }

    /// - Parameters:
    ///   - snapshot: The file to send; opened when the stream is opened.
    ///   - temporaryFile: Set when Conveyor wrote the file, which then lives as long as the stream.
    init(snapshot: BodyFile.Snapshot, temporaryFile: TemporaryBodyFile? = nil) {
        self.snapshot = snapshot
        self.temporaryFile = temporaryFile
        // The cheapest of InputStream's initialisers; every read goes through the overrides.
        super.init(data: Data())
    }

    /// A stream over a file a transport has opened and checked already.
    convenience init(opened file: OpenBodyFile) {
        self.init(snapshot: file.snapshot)
        preopened = file
    }

    /// A stream over the file at `fileURL` as it is now.
    /// - Throws: ``ConveyorError/bodyFileFailed(reason:)`` when it cannot be a body.
    convenience init(fileURL: URL) throws(ConveyorError) {
        self.init(snapshot: try BodyFile.Snapshot(of: fileURL))
    }

    override func open() {
        guard status != .open else { return }
        do {
            cursor = BodyFileCursor(try preopened ?? OpenBodyFile(snapshot))
            failure = nil
            status = .open
        } catch {
            cursor = nil
            failure = error
            status = .error
        }
    }

    override func close() {
        cursor = nil
        status = .closed
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { failure }
    override var hasBytesAvailable: Bool { status == .open }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard status == .open, var reader = cursor else { return status == .atEnd ? 0 : -1 }
        defer { cursor = reader }
        guard let count = reader.read(into: buffer, capacity: maxLength) else {
            failure = reader.file.failure
            status = .error
            return -1
        }
        if reader.isAtEnd { status = .atEnd }
        return count
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool {
        false
    }
}

extension BodyFileStream: RestartableBodyStream {
    /// A new stream over the same file (the same open file, when a transport opened it).
    func restartedBodyStream() -> InputStream {
        let stream = BodyFileStream(snapshot: snapshot, temporaryFile: temporaryFile)
        stream.preopened = preopened
        return stream
    }
}

import Foundation

/// The checks a file passes before it is sent as a body (whole, or as a multipart part), so a
/// bad path fails when the request is built, with the file named, not halfway through a send.
enum BodyFile {
    /// The size of the readable regular file at `fileURL`.
    /// - Throws: ``ConveyorError/bodyFileFailed(reason:)``: why the file cannot be a body.
    static func length(of fileURL: URL) throws(ConveyorError) -> Int64 {
        guard fileURL.isFileURL else { throw .bodyFileFailed(reason: .notAFileURL(fileURL)) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: fileURL.path, isDirectory: &isDirectory) else {
            throw .bodyFileFailed(reason: .fileNotFound(fileURL))
        }
        guard !isDirectory.boolValue else { throw .bodyFileFailed(reason: .fileIsDirectory(fileURL)) }
        guard FileManager.default.isReadableFile(atPath: fileURL.path),
            let size = (try? FileManager.default.attributesOfItem(atPath: fileURL.path))?[.size] as? NSNumber
        else {
            throw .bodyFileFailed(reason: .fileNotReadable(fileURL))
        }
        return size.int64Value
    }
}

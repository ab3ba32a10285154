import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A body file Conveyor wrote (a multipart body over the memory threshold), owned by the
/// request's body stream: removed when the operation sending it finishes, or — for a request
/// built and never sent — when the last copy of the request goes away.
///
/// The request owns its body, rather than a process-wide table of streams (which kept every
/// unsent request's stream, and its file, for the life of the process).
final class TemporaryBodyFile: Sendable {
    let url: URL

    init(_ url: URL) { self.url = url }

    /// Removes the file; a second call finds nothing to remove.
    func remove() {
        _ = url.withUnsafeFileSystemRepresentation { path in path.map { unlink($0) } }
    }

    deinit { remove() }
}

/// A body stream that may own a ``TemporaryBodyFile``.
protocol TemporaryBodyFileOwner: AnyObject {
    var temporaryFile: TemporaryBodyFile? { get }
}

import ConveyorLocking
import Foundation

/// Where ``NetworkLogger`` writes. An entry is one or more whole lines; the logger hands each
/// entry to its sink from one serial queue, so entries never interleave.
public protocol LogSink: Sendable {
    /// Writes one entry.
    /// - Parameters:
    ///   - entry: The text, one or more lines without a trailing newline.
    ///   - level: The entry's level.
    func write(_ entry: String, level: NetworkLogger.Level)
}

/// Writes entries to standard error (the default sink).
public struct StandardErrorLogSink: LogSink {
    /// Creates the sink.
    public init() {}

    /// Writes the entry and a newline to standard error.
    public func write(_ entry: String, level: NetworkLogger.Level) {
        FileHandle.standardError.write(Data((entry + "\n").utf8))
    }
}

/// Hands entries to a closure, to forward them to a logging system of your own.
public struct ClosureLogSink: LogSink {
    /// The closure.
    public let handler: @Sendable (String, NetworkLogger.Level) -> Void

    /// Creates the sink.
    /// - Parameter handler: Called with each entry and its level, on the logger's queue.
    public init(_ handler: @escaping @Sendable (String, NetworkLogger.Level) -> Void) { self.handler = handler }

    /// Calls the closure.
    public func write(_ entry: String, level: NetworkLogger.Level) { handler(entry, level) }
}

/// Appends entries to a file, rotating it when it grows past a size: `log` becomes `log.1`,
/// `log.1` becomes `log.2`, … up to ``maximumFiles``.
public final class FileLogSink: LogSink {
    /// The file written.
    public let url: URL
    /// The size in bytes past which the file is rotated.
    public let maximumBytes: Int
    /// How many rotated files are kept.
    public let maximumFiles: Int
    /// The open handle and the file's size, together behind one Mutex: the handle is written
    /// and closed only inside it.
    private let state: Lock<(handle: LockedReference<FileHandle>?, size: Int)>

    /// Creates the sink; the file and its directory are created when missing.
    /// - Parameters:
    ///   - url: The log file.
    ///   - maximumBytes: Rotate past this size; default 5 MB.
    ///   - maximumFiles: Rotated files kept; default 3.
    public init(url: URL, maximumBytes: Int = 5_000_000, maximumFiles: Int = 3) {
        self.url = url
        self.maximumBytes = maximumBytes
        self.maximumFiles = maximumFiles
        state = Lock((nil, 0))
    }

    /// Appends the entry, rotating first when the file is full. Failures are dropped: a logger
    /// must never break the program it observes.
    public func write(_ entry: String, level: NetworkLogger.Level) {
        let data = Data((entry + "\n").utf8)
        state.withLock { state in
            if state.handle == nil { open(&state) }
            if state.size + data.count > maximumBytes, state.size > 0 {
                try? state.handle?.value.close()
                state.handle = nil
                rotate()
                open(&state)
            }
            guard let handle = state.handle?.value else { return }
            if (try? handle.write(contentsOf: data)) != nil { state.size += data.count }
        }
    }

    private func open(_ state: inout (handle: LockedReference<FileHandle>?, size: Int)) {
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: url.path) { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        guard let handle = try? FileHandle(forWritingTo: url), let end = try? handle.seekToEnd() else { return }
        state = (LockedReference(handle), Int(end))
    }

    private func rotate() {
        let manager = FileManager.default
        func rotated(_ index: Int) -> URL { URL(fileURLWithPath: url.path + ".\(index)") }
        try? manager.removeItem(at: rotated(maximumFiles))
        if maximumFiles > 1 {
            for index in stride(from: maximumFiles - 1, through: 1, by: -1) where manager.fileExists(atPath: rotated(index).path) {
                try? manager.moveItem(at: rotated(index), to: rotated(index + 1))
            }
        }
        if maximumFiles >= 1 { try? manager.moveItem(at: url, to: rotated(1)) } else { try? manager.removeItem(at: url) }
    }
}

// Every built-in sink has the same shorthand: `logger.sink = .standardError`, `.closure { … }`,
// `.file(url)`, `.osLog(subsystem:)`.

extension LogSink where Self == StandardErrorLogSink {
    /// Standard error.
    public static var standardError: StandardErrorLogSink { StandardErrorLogSink() }
}

extension LogSink where Self == ClosureLogSink {
    /// A closure called with each entry and its level, on the logger's queue.
    /// - Parameter handler: The closure.
    /// - Returns: The sink.
    public static func closure(_ handler: @escaping @Sendable (String, NetworkLogger.Level) -> Void) -> ClosureLogSink {
        ClosureLogSink(handler)
    }
}

extension LogSink where Self == FileLogSink {
    /// A file, rotated past `maximumBytes` (see ``FileLogSink``).
    /// - Parameters:
    ///   - url: The log file.
    ///   - maximumBytes: Rotate past this size; default 5 MB.
    ///   - maximumFiles: Rotated files kept; default 3.
    /// - Returns: The sink.
    public static func file(_ url: URL, maximumBytes: Int = 5_000_000, maximumFiles: Int = 3) -> FileLogSink {
        FileLogSink(url: url, maximumBytes: maximumBytes, maximumFiles: maximumFiles)
    }
}

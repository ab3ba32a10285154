import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension MultipartFormData {
    /// The whole body in memory. Use for small bodies; large ones go to a file with
    /// ``writeEncodedData(to:)``.
    /// - Returns: The encoded body.
    /// - Throws: ``ConveyorError/multipartEncodingFailed(reason:)`` when a file or stream part cannot be read.
    public func encode() throws -> Data {
        var output = Data()
        output.reserveCapacity(Int(clamping: contentLength))
        try encode { output.append($0) }
        return output
    }

    /// Writes the body to a file through a 64 kB buffer, so memory stays flat for any size.
    /// The file is made readable and writable by its owner only (0600). A partial file is
    /// removed when writing fails.
    /// - Parameter fileURL: Where to write; an existing file is replaced.
    /// - Throws: ``ConveyorError/multipartEncodingFailed(reason:)``, naming the file on write errors (disk full, permissions).
    public func writeEncodedData(to fileURL: URL) throws {
        let writeFailed = { (error: any Error) in ConveyorError.multipartEncodingFailed(reason: .bodyFileWriteFailed(fileURL, error)) }
        // 0600 whatever the umask (`fchmod`, also for a file that existed): a body carries what
        // the user posts — for an outbox item, kept on disk for days.
        let descriptor = open(fileURL.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw writeFailed(POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
        guard fchmod(descriptor, 0o600) == 0 else {
            let code = errno
            close(descriptor)
            throw writeFailed(POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO))
        }
        do {
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            defer { try? handle.close() }
            var buffer = Data()
            buffer.reserveCapacity(Self.bufferSize)
            do {
                try encode { chunk in
                    buffer.append(chunk)
                    if buffer.count >= Self.bufferSize {
                        try handle.write(contentsOf: buffer)
                        buffer.removeAll(keepingCapacity: true)
                    }
                }
                try handle.write(contentsOf: buffer)
            } catch let error as ConveyorError {
                throw error
            } catch {
                throw writeFailed(error)
            }
        } catch {
            try? FileManager.default.removeItem(at: fileURL)
            if let error = error as? ConveyorError { throw error }
            throw writeFailed(error)
        }
    }

    /// 64 kB: large enough that syscalls are not the cost, small enough to be noise in RSS.
    static let bufferSize = 64 * 1024

    private func encode(into sink: (Data) throws -> Void) throws {
        guard !parts.isEmpty else { return }
        for part in parts {
            try sink(headerData(for: part))
            switch part.body {
            case .data(let data):
                try sink(data)
            case .file(let url):
                try copy(file: url, part: part, into: sink)
            case .stream(let stream):
                try copy(stream: stream, part: part, into: sink)
            }
            try sink(Data("\r\n".utf8))
        }
        try sink(closingBoundary)
    }

    private func copy(file url: URL, part: Part, into sink: (Data) throws -> Void) throws {
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            throw ConveyorError.multipartEncodingFailed(
                reason: FileManager.default.fileExists(atPath: url.path) ? .fileNotReadable(url) : .fileNotFound(url))
        }
        defer { try? handle.close() }
        var read: Int64 = 0
        while read < part.length {
            let want = Int(min(Int64(Self.bufferSize), part.length - read))
            guard let chunk = try? handle.read(upToCount: want), !chunk.isEmpty else { break }
            try sink(chunk)
            read += Int64(chunk.count)
        }
        // A file that shrank since it was appended would make Content-Length lie: fail instead.
        guard read == part.length else {
            throw ConveyorError.multipartEncodingFailed(reason: .partReadFailed(name: part.name, expected: part.length, read: read))
        }
    }

    private func copy(stream: InputStream, part: Part, into sink: (Data) throws -> Void) throws {
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: Self.bufferSize)
        var read: Int64 = 0
        while read < part.length {
            let want = Int(min(Int64(buffer.count), part.length - read))
            // Only the count is consulted: `streamError` traps on Linux when there is no error.
            let count = buffer.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: want) }
            guard count > 0 else { break }
            try sink(Data(buffer[0..<count]))
            read += Int64(count)
        }
        guard read == part.length else {
            throw ConveyorError.multipartEncodingFailed(reason: .partReadFailed(name: part.name, expected: part.length, read: read))
        }
    }
}

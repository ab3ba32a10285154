#if os(Linux)
    import Foundation
    import ConveyorLocking
    #if canImport(Glibc)
        import Glibc
    #endif

    /// The body of a request sent by the curl transport, read by libcurl's read callback in
    /// pieces of its buffer size, so a file or stream is never loaded into memory.
    final class CurlRequestBody: Sendable {
        // Sendable, checked by the compiler: the mutable state (position, cursor, stream) is in
        // `reader`, behind one Lock; `length` is immutable.

        enum Source: @unchecked Sendable {
            // @unchecked: an InputStream is read by one thread at a time, under the body's lock.
            case data(Data)
            /// Opened and checked by the transport before the loop sees it.
            case file(OpenBodyFile)
            case stream(InputStream)
        }

        fileprivate struct Reader {
            let source: Source
            var offset = 0
            var cursor: BodyFileCursor?
            var streamOpened = false
        }

        /// The exact size, or nil for a stream of unknown length (sent chunked).
        let length: Int64?
        /// libcurl's upload buffer for this body (`CURLOPT_UPLOAD_BUFFERSIZE`), or nil for its
        /// default of 64 kB. Data and file bodies above that are read in pieces of up to 1 MiB:
        /// a 1 MiB body then goes to the socket in one read callback and one large `send`
        /// instead of 16 of each, which took a fifth less CPU per 1 MiB POST in
        /// `conveyor-bench`. Streams keep 64 kB, so a throttled stream stays smooth. The buffer
        /// lives as long as the transfer: at most 1 MiB per upload in flight.
        let uploadBufferSize: Int?
        /// The largest upload buffer a body gets (libcurl accepts 16 kB to 2 MB).
        static let maximumUploadBufferSize = 1024 * 1024
        /// libcurl's own upload buffer size, which smaller bodies keep.
        private static let defaultUploadBufferSize = 64 * 1024
        private let reader: Lock<Reader>

        /// - Parameters:
        ///   - source: Where the bytes come from.
        ///   - declaredLength: The request's `Content-Length`, which a stream of otherwise unknown
        ///     length is sent with (instead of chunked).
        init(_ source: Source, declaredLength: Int64? = nil) {
            var reader = Reader(source: source)
            switch source {
            case .data(let data):
                length = Int64(data.count)
            case .file(let file):
                // The length fixed when the request was built, whatever the file's size now:
                // the cursor hands out that many bytes and no more.
                reader.cursor = BodyFileCursor(file)
                length = file.snapshot.length
            case .stream:
                length = declaredLength
            }
            if case .stream = source {
                uploadBufferSize = nil
            } else if let length, length > Int64(Self.defaultUploadBufferSize) {
                uploadBufferSize = Int(min(length, Int64(Self.maximumUploadBufferSize)))
            } else {
                uploadBufferSize = nil
            }
            self.reader = Lock(reader)
        }

        deinit {
            reader.withLock { reader in
                if case .stream(let stream) = reader.source, reader.streamOpened { stream.close() }
            }
        }

        /// Copies up to `capacity` bytes into `buffer`.
        /// - Returns: The number of bytes copied (0 at the end), or nil on a read error.
        func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int? {
            let address = UInt(bitPattern: buffer)
            return reader.withLock { reader in
                // The address travels as an integer: the lock's closure may not capture a pointer.
                reader.read(into: UnsafeMutablePointer(bitPattern: address)!, capacity: capacity)
            }
        }

        /// Moves back to `position` (libcurl rewinds to resend a body on a reused connection).
        /// - Returns: Whether the body could move there; a stream cannot.
        func seek(to position: Int64) -> Bool {
            reader.withLock { $0.seek(to: position) }
        }
    }

    extension CurlRequestBody.Reader {
        mutating func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int? {
            switch source {
            case .data(let data):
                let count = min(capacity, data.count - offset)
                guard count > 0 else { return 0 }
                data.withUnsafeBytes { bytes in
                    let start = bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
                    buffer.update(from: start, count: count)
                }
                offset += count
                return count
            case .file:
                return cursor?.read(into: buffer, capacity: capacity)
            case .stream(let stream):
                if !streamOpened {
                    stream.open()
                    streamOpened = true
                }
                let count = stream.read(buffer, maxLength: capacity)
                // A count above the capacity is a broken stream, not more body: a read error.
                return (0...capacity).contains(count) ? count : nil
            }
        }

        mutating func seek(to position: Int64) -> Bool {
            switch source {
            case .data(let data):
                guard position >= 0, position <= Int64(data.count) else { return false }
                offset = Int(position)
                return true
            case .file:
                return cursor?.seek(to: position) ?? false
            case .stream:
                return false
            }
        }
    }
#endif

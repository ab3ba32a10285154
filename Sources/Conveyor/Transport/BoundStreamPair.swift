import Foundation

#if canImport(ObjectiveC)
    // Nothing of it is used; the stand-in of scripts/apple-stand-ins declares
    // `Stream.getBoundStreams`, which corelibs lacks, so the Apple branch is type-checked on Linux.
    import ObjectiveC
#elseif canImport(Glibc)
    import Glibc
#endif

/// Two streams joined end to end: what a ``BodyStreamPump`` writes into ``output`` is what
/// URLSession reads from ``input``. Neither is a Swift subclass, so URLSession gets a stream of
/// its own kind, with the run-loop scheduling and events CFNetwork needs.
///
/// On Apple platforms the pair is `Stream.getBoundStreams(withBufferSize:inputStream:outputStream:)`,
/// which Apple documents for exactly this ("Uploading streams of data"). corelibs Foundation has
/// no bound streams, so on Linux the pair is a pipe: file streams on its two ends. The Apple
/// branch (`canImport(ObjectiveC)`) is type-checked against the stand-ins, never run here.
final class BoundStreamPair {
    // Not Sendable: its streams are not. The pump's thread writes ``output``; URLSession reads
    // ``input``; ``unblockWriter()`` only reads the pipe's own descriptor.

    /// The pair's buffer, and the largest piece the pump writes at once: 64 KiB, a Linux pipe's
    /// default capacity, so one drain of the pipe always lets a blocked write finish.
    static let bufferSize = 64 * 1024

    /// The stream to hand URLSession (`httpBodyStream`, or `needNewBodyStream`'s answer).
    let input: InputStream
    /// The stream the pump writes the body into; closing it ends the body.
    let output: OutputStream
    /// Whether the reader blocks in `read` until bytes arrive: corelibs reads the body on its
    /// transfer loop, so a failed body must still be ended (closed) for the loop to go on and
    /// see the task's cancel. CFNetwork reads bound streams on stream events and never blocks.
    let readerBlocksOnRead: Bool

    #if !canImport(ObjectiveC)
        /// The pipe's read end, kept open (non-blocking) until the pair goes away: it holds the
        /// pipe up until corelibs opens ``input`` (which names this descriptor), and lets
        /// ``unblockWriter()`` empty the pipe.
        private let readEnd: Int32
    #endif

    /// Makes a pair, or nil when the system refuses one (out of descriptors).
    init?() {
        #if !canImport(ObjectiveC)
            // A pipe, opened close-on-exec at once (a child process spawned meanwhile must not
            // keep it open). Glibc's Swift module does not declare `pipe2`, hence the lookup.
            var ends: [Int32] = [-1, -1]
            guard let pipe2 = Self.pipe2, pipe2(&ends, O_CLOEXEC) == 0 else { return nil }
            // corelibs can only make streams from paths; /proc/self/fd/N opens the pipe again.
            guard let input = InputStream(fileAtPath: "/proc/self/fd/\(ends[0])"),
                let output = OutputStream(toFileAtPath: "/proc/self/fd/\(ends[1])", append: false)
            else {
                close(ends[0])
                close(ends[1])
                return nil
            }
            output.open()
            // The output holds its own descriptor from here on.
            close(ends[1])
            guard output.streamStatus == .open else {
                close(ends[0])
                return nil
            }
            _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
            readEnd = ends[0]
            readerBlocksOnRead = true
            self.input = input
            self.output = output
        #else
            var input: InputStream?
            var output: OutputStream?
            Stream.getBoundStreams(withBufferSize: Self.bufferSize, inputStream: &input, outputStream: &output)
            guard let input, let output else { return nil }
            output.open()
            readerBlocksOnRead = false
            self.input = input
            self.output = output
        #endif
    }

    #if !canImport(ObjectiveC)
        deinit { close(readEnd) }

        private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
        /// glibc's `pipe2`, looked up once.
        private static let pipe2: Pipe2? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2").map {
            unsafeBitCast($0, to: Pipe2.self)
        }
    #endif

    /// Lets a write blocked on a full pair return, once the body is no longer wanted.
    ///
    /// On Linux the pipe is emptied: nothing may read it any more (the task ended), and corelibs
    /// never closes a body stream, so without this a write into a full pipe would wait for
    /// ever. On Apple platforms URLSession closes the input when its task ends, which fails the
    /// write; there is nothing to do.
    func unblockWriter() {
        #if !canImport(ObjectiveC)
            var scratch = [UInt8](repeating: 0, count: Self.bufferSize)
            while scratch.withUnsafeMutableBytes({ read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
        #endif
    }
}

import Foundation

/// A request body stream that hands out at most `packetSize` bytes per read and waits `delay`
/// before each packet after the first: AFNetworking's `throttleBandwidthWithPacketSize:delay:`.
///
/// It reads from a file or from memory, never both into memory at once. It overrides every
/// stream property URLSession consults, `streamError` included: corelibs' own implementation
/// traps when there is no error.
/// Not Sendable (InputStream is not): URLSession reads a body stream from one thread at a time.
final class ThrottledInputStream: InputStream, TemporaryBodyFileOwner {
    enum Source {
        case data(Data)
        case file(URL)
    }

    private let source: Source
    private let packetSize: Int
    private let delay: TimeInterval
    private var handle: FileHandle?
    // Int64: a body past 2 GiB is counted right where `Int` has 32 bits (watchOS on arm64_32).
    private var offset: Int64 = 0
    private let length: Int64
    private var status: Stream.Status = .notOpen
    private var packetsSent = 0
    /// Whether `read` waits between packets. The curl transport turns it off and lets libcurl
    /// pace the upload (`CURLOPT_MAX_SEND_SPEED_LARGE`) instead: a read that sleeps would stall
    /// every transfer sharing its thread.
    var sleepsBetweenPackets = true
    /// The file read, when Conveyor wrote it (a multipart body): it lives as long as the stream.
    var temporaryFile: TemporaryBodyFile?

    /// The average rate the throttle allows, in bytes per second; nil without a delay.
    var bytesPerSecond: Int64? {
        // Clamped before the conversion: a delay of 1e-320 s would make the rate infinite.
        delay > 0 ? max(1, Int64(Swift.min(Double(packetSize) / delay, 1e18))) : nil
    }

    init(source: Source, length: Int64, packetSize: Int, delay: TimeInterval) {
        self.source = source
        self.length = length
        self.packetSize = max(1, packetSize)
        self.delay = Seconds.clamped(delay)
        super.init(data: Data())
    }

    /// Opens the stream at its first byte: opened again after it was read, it starts over
    /// (corelibs reads the same stream again when it answers an authentication challenge).
    override func open() {
        try? handle?.close()
        handle = nil
        if case .file(let url) = source { handle = try? FileHandle(forReadingFrom: url) }
        offset = 0
        packetsSent = 0
        status = .open
    }

    override func close() {
        try? handle?.close()
        handle = nil
        status = .closed
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { nil }
    override var hasBytesAvailable: Bool { offset < length }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard offset < length else {
            status = .atEnd
            return 0
        }
        if packetsSent > 0, delay > 0, sleepsBetweenPackets { Thread.sleep(forTimeInterval: delay) }
        let count = Int(min(Int64(min(maxLength, packetSize)), length - offset))
        let chunk: Data
        switch source {
        case .data(let data):
            chunk = data.subdata(in: Int(offset)..<(Int(offset) + count))
        case .file:
            guard let read = try? handle?.read(upToCount: count), !read.isEmpty else {
                status = .error
                return -1
            }
            chunk = read
        }
        chunk.copyBytes(to: buffer, count: chunk.count)
        offset += Int64(chunk.count)
        packetsSent += 1
        return chunk.count
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool {
        false
    }
}

extension ThrottledInputStream: RestartableBodyStream {
    /// A new stream of the same bytes at the same pace, owning the same temporary file.
    func restartedBodyStream() -> InputStream {
        let stream = ThrottledInputStream(source: source, length: length, packetSize: packetSize, delay: delay)
        stream.temporaryFile = temporaryFile
        stream.sleepsBetweenPackets = sleepsBetweenPackets
        return stream
    }
}

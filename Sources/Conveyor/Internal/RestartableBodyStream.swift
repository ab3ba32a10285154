import Foundation

/// A body stream that can be read again from its first byte by a fresh copy of itself: what
/// Conveyor answers when URLSession asks for a body again (``PumpedRequestBody``).
protocol RestartableBodyStream: InputStream {
    /// A new, unopened stream of the same bytes, from the first.
    func restartedBodyStream() -> InputStream
}

extension InputStream {
    /// Whether an attempt that needs the body again may send this stream: Conveyor's own
    /// streams start over; a caller's is read once.
    var startsOver: Bool { self is any RestartableBodyStream }
}

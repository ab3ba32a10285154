import Foundation

/// A body stream that can be read again from its first byte by a fresh copy of itself: what
/// Conveyor answers when URLSession asks for a body again (``PumpedRequestBody``).
protocol RestartableBodyStream: InputStream {
    /// A new, unopened stream of the same bytes, from the first.
    func restartedBodyStream() -> InputStream
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everything an async call learned: the request sent last, the response, the raw body, the
/// serialized value and the operation's own measurements.
public struct HTTPResponse<Value: Sendable>: Sendable {
    /// The request sent last (after redirects).
    public let request: URLRequest
    /// The response head.
    public let head: HTTPResponseHead
    /// The raw body; empty when there was none.
    public let data: Data
    /// The serialized value.
    public let value: Value
    /// Timing and size facts.
    public var metrics: OperationMetrics { metricsBox.value }
    /// Behind a pointer: every async layer between a caller and the operation keeps room for
    /// its result in its frame for as long as the request waits, and the metrics are most of
    /// a response's size (about 160 of 210 bytes).
    private let metricsBox: ColdBox<OperationMetrics>

    /// The response head as Foundation's type, built on first access (see ``HTTPResponseHead``).
    public var response: HTTPURLResponse { head.urlResponse }

    /// The response's status code.
    public var statusCode: Int { head.statusCode }

    init(request: URLRequest, head: HTTPResponseHead, data: Data, value: Value, metrics: OperationMetrics) {
        self.request = request
        self.head = head
        self.data = data
        self.value = value
        self.metricsBox = ColdBox(metrics)
    }
}

extension HTTPResponse {
    /// Where the response came from: the network or ``HTTPCache``.
    public var source: HTTPCache.ResponseSource { metrics.responseSource }
}

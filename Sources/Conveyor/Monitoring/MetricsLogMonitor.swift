import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An ``EventMonitor`` that writes one line of JSON per finished request — for a log shipper,
/// or `jq`:
///
/// ```json
/// {"attempts":1,"bytesReceived":1234,"bytesSent":0,"duration":0.0213,"method":"GET","redirects":0,"source":"network","status":200,"url":"https://api.example.com/items?page=2"}
/// ```
///
/// Keys are sorted; `attempts` is ``OperationMetrics/attemptCount`` (the first attempt and its
/// retries; redirects are `redirects`); `status` is absent without a response, `error` (the error's redacted
/// description) present only for a failure, `timeToFirstResponse` only once a response came.
/// URLs are redacted as in ``NetworkLogger`` (no user or password; token-like query values
/// hidden) and every credential value Conveyor sent is masked. Lines go to a ``LogSink`` at
/// level `.info` from the client's monitor queue.
///
/// ```swift
/// configuration.eventMonitors = [MetricsLogMonitor(sink: FileLogSink(url: metricsURL))]
/// ```
public struct MetricsLogMonitor: EventMonitor {
    /// Where the lines go.
    public let sink: any LogSink
    /// What is hidden in URLs and error texts. Default ``Redaction/init(headerNames:parameterNames:)``.
    public let redaction: Redaction

    /// Creates the monitor.
    /// - Parameters:
    ///   - sink: Where the lines go; default standard error.
    ///   - redaction: What is hidden; default the logger's defaults.
    public init(sink: any LogSink = StandardErrorLogSink(), redaction: Redaction = Redaction()) {
        self.sink = sink
        self.redaction = redaction
    }

    /// Writes the request's line.
    public func requestDidFinish(
        _ operation: HTTPRequestOperation, request: URLRequest, response: HTTPResponseHead?, error: ConveyorError?,
        metrics: OperationMetrics?
    ) {
        sink.write(line(request: request, response: response, error: error, metrics: metrics), level: .info)
    }

    /// The JSON line for one finished request.
    func line(request: URLRequest, response: HTTPResponseHead?, error: ConveyorError?, metrics: OperationMetrics?) -> String {
        var fields: [String: Any] = ["method": request.httpMethod ?? "GET", "url": redaction.url(request.url)]
        if let response { fields["status"] = response.statusCode }
        if let error { fields["error"] = redaction.masked(error.description) }
        if let metrics {
            fields["duration"] = Self.rounded(metrics.duration)
            fields["bytesReceived"] = metrics.bytesReceived
            fields["bytesSent"] = metrics.bytesSent
            fields["attempts"] = metrics.attemptCount
            fields["redirects"] = metrics.redirectCount
            fields["source"] = Self.name(of: metrics.responseSource)
            if let first = metrics.timeToFirstResponse { fields["timeToFirstResponse"] = Self.rounded(first) }
        }
        // Every value above is a string or a number: serialization cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return redaction.masked(String(decoding: data, as: UTF8.self))
    }

    private static func rounded(_ seconds: TimeInterval) -> Double { (seconds * 1e4).rounded() / 1e4 }

    private static func name(of source: HTTPCache.ResponseSource) -> String {
        switch source {
        case .network: return "network"
        case .cache: return "cache"
        case .revalidatedCache: return "revalidatedCache"
        case .staleOnError: return "staleOnError"
        }
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The logger as one ``EventMonitor`` among others: put it in a client's
/// ``HTTPClient/Configuration/eventMonitors`` to log that client's operations alone, with the same
/// lines, levels, redaction and sink as ``NetworkLogger/startLogging()`` — which logs every
/// operation of the process. One logger logs by one route: while it observes the notifications
/// (after `startLogging()`), its monitor methods log nothing, so nothing is written twice. The
/// route is chosen when an event reaches the logger, and a monitor hears of an event later than
/// the notifications do: calling `startLogging()` or `stopLogging()` on a logger that is also a
/// client's monitor, while that client's operations run, can log an operation around the switch
/// twice or not at all. Use one route per logger.
extension NetworkLogger: EventMonitor {
    /// Notes the start: durations count from here.
    public func requestDidStart(_ operation: HTTPRequestOperation, request: URLRequest) {
        operationDidStart(operation, observed: false)
    }

    /// Logs the first attempt as it is sent (`→ GET url`), after the adapters.
    public func request(_ operation: HTTPRequestOperation, willSend request: URLRequest, attempt: Int) {
        operationWillSend(operation, request: request, attempt: attempt, observed: false)
    }

    /// Logs a retry (`↻ 503 GET url [attempt 1, 0.012 s] retrying: …`).
    public func request(_ operation: HTTPRequestOperation, willRetry attempt: Int, after delay: TimeInterval, because error: ConveyorError)
    {
        operationWillRetry(
            operation, request: operation.currentRequest, response: error.response.map(HTTPResponseHead.init), attempt: attempt,
            error: error, observed: false)
    }

    /// Logs the finish (`← 200 GET url [0.123 s, 1.2 kB]`, or the failure).
    public func requestDidFinish(
        _ operation: HTTPRequestOperation, request: URLRequest, response: HTTPResponseHead?, error: ConveyorError?,
        metrics: OperationMetrics?
    ) {
        operationDidFinish(operation, request: request, response: response, error: error, metrics: metrics, observed: false)
    }
}

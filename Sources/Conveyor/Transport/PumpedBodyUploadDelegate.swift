import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Forwards a URLSession task's events for a request whose body goes through a
/// ``PumpedRequestBody``: when the task ends it stops the body's pump (its thread ends), and a
/// task that failed because the body's source failed reports that failure (a file body's
/// ``ConveyorError/bodyFileFailed(reason:)``) instead of the cancel that stopped it.
final class PumpedBodyUploadDelegate: ForwardingTransportTaskDelegate {
    /// The operation's delegate (or the next wrapper in front of it).
    let wrapped: any TransportTaskDelegate
    /// The task's body, stopped when the task ends.
    let body: PumpedRequestBody

    /// Stands in front of `wrapped` for a task whose body is `body`.
    init(_ wrapped: any TransportTaskDelegate, body: PumpedRequestBody) {
        self.wrapped = wrapped
        self.body = body
    }

    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        body.cancel()
        // Even when the task completed without an error: on Linux the failed body had to be
        // ended for corelibs' loop to take the cancel, and an answer to the short body can beat
        // that cancel (measured: 3 in 20). It is no answer to the request that was asked for.
        if let failure = body.failure {
            wrapped.transportDidComplete(response: nil, error: failure)
        } else {
            wrapped.transportDidComplete(response: response, error: error)
        }
    }
}

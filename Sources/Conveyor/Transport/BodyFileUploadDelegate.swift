import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Forwards a URLSession task's events for a request whose body is a file read through a
/// ``BodyFileStream``: corelibs sees a stream (of unknown length to it), so this tells the
/// file's length as the total to send, and reports the file's failure (it ended early or
/// changed) instead of the abort corelibs makes of it.
final class BodyFileUploadDelegate: ForwardingTransportTaskDelegate {
    let wrapped: any TransportTaskDelegate
    let file: OpenBodyFile

    init(_ wrapped: any TransportTaskDelegate, file: OpenBodyFile) {
        self.wrapped = wrapped
        self.file = file
    }

    func transportDidSend(bytes: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        wrapped.transportDidSend(bytes: bytes, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: file.snapshot.length)
    }
    func transportDidComplete(response: HTTPResponseHead?, error: (any Error)?) {
        if error != nil, let failure = file.failure {
            wrapped.transportDidComplete(response: nil, error: failure)
        } else {
            wrapped.transportDidComplete(response: response, error: error)
        }
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An item's body as read back for one delivery, handed to the client's request builder as its
/// serializer: the item's parameters were encoded when it was written, so "serializing" is
/// attaching the stored bytes. Going through
/// ``HTTPClient/request(method:path:parameters:headers:requestSerializer:)`` this way lets a
/// subclass's override (the AFNetworking way to sign every request) see the body it signs.
struct OutboxStoredBody: RequestSerializer {
    enum Source: Sendable {
        case none
        case data(Data)
        /// A body over the in-memory limit: streamed from its file, checked against this snapshot.
        case file(BodyFile.Snapshot)
    }

    let source: Source

    /// Returns `request` with the stored body; `parameters` is always nil (the builder's default).
    func serialize(_ request: URLRequest, parameters: Parameters?) throws -> URLRequest {
        attached(to: request)
    }

    /// `request` with the stored body, whatever body it had.
    func attached(to request: URLRequest) -> URLRequest {
        var request = request
        switch source {
        case .none:
            break
        case .data(let data):
            request.httpBody = data
        case .file(let snapshot):
            // A new stream per request: a stream is read once.
            request.httpBodyStream = BodyFileStream(snapshot: snapshot)
        }
        return request
    }

    /// Whether `request` carries a body (an override may have built it with its own serializer).
    func isMissing(from request: URLRequest) -> Bool {
        if case .none = source { return false }
        return request.httpBody == nil && request.httpBodyStream == nil
    }
}

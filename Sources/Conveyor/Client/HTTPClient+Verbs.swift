import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient {
    /// Builds a request, wraps it in an operation and enqueues it: the AFNetworking-style call
    /// every verb method uses.
    ///
    /// A request that cannot be built (an unresolvable path, parameters that cannot be
    /// encoded) still returns an enqueued operation, which fails at once with the
    /// ``ConveyorError`` through `failure`: callers have one error path, never a crash.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded by ``requestSerializer``.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - success: Run on the callback queue with the operation and its serialized value.
    ///   - failure: Run on the callback queue with the operation and the error.
    /// - Returns: The enqueued operation.
    @discardableResult
    public func enqueueRequest(
        method: HTTPMethod, path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:],
        requestSerializer: (any RequestSerializer)? = nil,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        enqueueOperation(success: success, failure: failure) {
            try request(method: method, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer)
        }
    }

    /// Builds the request with `makeRequest`, then the operation, and enqueues it; a request
    /// that cannot be built becomes an operation that fails with the error.
    func enqueueOperation(
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?,
        makeRequest: () throws -> URLRequest
    ) -> HTTPRequestOperation {
        let operation: HTTPRequestOperation
        do {
            operation = self.operation(with: try makeRequest(), success: success, failure: failure)
        } catch {
            operation = failedOperation(error, success: success, failure: failure)
        }
        enqueue(operation)
        return operation
    }

    /// The request URL of an operation whose request could not be built, in a client without
    /// a base URL: it is never sent.
    static let placeholderURL = URL(string: "about:blank")!

    /// An operation that fails with `error` as soon as it starts, without network traffic.
    func failedOperation(
        _ error: any Error, success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        let operation = self.operation(with: URLRequest(url: baseURL ?? Self.placeholderURL), success: success, failure: failure)
        operation.failWhenStarted(with: error)
        return operation
    }

    /// Enqueues a `GET`; parameters go into the query string.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - success: Run with the operation and its serialized value.
    ///   - failure: Run with the operation and the error.
    /// - Returns: The enqueued operation; set its progress blocks right away to follow the transfer.
    @discardableResult
    public func get(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        enqueueRequest(
            method: .get, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            success: success, failure: failure)
    }

    /// Enqueues a `HEAD`; the success value is empty `Data`.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - success: Run with the operation and its serialized value.
    ///   - failure: Run with the operation and the error.
    /// - Returns: The enqueued operation; set its progress blocks right away to follow the transfer.
    @discardableResult
    public func head(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        enqueueRequest(
            method: .head, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            success: success, failure: failure)
    }

    /// Enqueues a `POST`; parameters go into the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body by ``requestSerializer``; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - success: Run with the operation and its serialized value.
    ///   - failure: Run with the operation and the error.
    /// - Returns: The enqueued operation; set its progress blocks right away to follow the transfer.
    @discardableResult
    public func post(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        enqueueRequest(
            method: .post, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            success: success, failure: failure)
    }

    /// Enqueues a `PUT`; parameters go into the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body by ``requestSerializer``; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - success: Run with the operation and its serialized value.
    ///   - failure: Run with the operation and the error.
    /// - Returns: The enqueued operation; set its progress blocks right away to follow the transfer.
    @discardableResult
    public func put(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        enqueueRequest(
            method: .put, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            success: success, failure: failure)
    }

    /// Enqueues a `PATCH`; parameters go into the body.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the body by ``requestSerializer``; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - success: Run with the operation and its serialized value.
    ///   - failure: Run with the operation and the error.
    /// - Returns: The enqueued operation; set its progress blocks right away to follow the transfer.
    @discardableResult
    public func patch(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        enqueueRequest(
            method: .patch, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            success: success, failure: failure)
    }

    /// Enqueues a `DELETE`; parameters go into the query string.
    /// - Parameters:
    ///   - path: Resolved against ``baseURL``.
    ///   - parameters: Encoded into the query; nil for none.
    ///   - headers: Headers for this request alone, replacing default headers of the same name; default none.
    ///   - requestSerializer: Overrides ``requestSerializer`` for this call; nil uses it.
    ///   - success: Run with the operation and its serialized value.
    ///   - failure: Run with the operation and the error.
    /// - Returns: The enqueued operation; set its progress blocks right away to follow the transfer.
    @discardableResult
    public func delete(
        _ path: String, parameters: Parameters? = nil, headers: HTTPHeaders = [:], requestSerializer: (any RequestSerializer)? = nil,
        success: HTTPRequestOperation.Success?, failure: HTTPRequestOperation.Failure?
    ) -> HTTPRequestOperation {
        enqueueRequest(
            method: .delete, path: path, parameters: parameters, headers: headers, requestSerializer: requestSerializer,
            success: success, failure: failure)
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    func attemptDidComplete(response: HTTPResponseHead?, error: (any Error)?, attempt: Int, settings: ResolvedSettings) {
        guard transfer({ $0.isCurrent(attempt) }) else { return }
        // URLSession ends a task whose challenge was refused with an error, the 401 only in its
        // response: the authenticator may still refresh and replay.
        if error != nil, let response, replayAfterCredentialRefresh(response, attempt: attempt, authenticator: settings.authenticator) {
            return
        }
        if let error {
            fail(failure(for: error, response: response, idleTimeout: settings.timeouts.idle), response: response, retryable: true)
            return
        }
        guard let response else {
            fail(.network(URLError(.badServerResponse)), response: nil, retryable: true)
            return
        }
        // The head decided whether this is a redirect to follow (``redirectRoute(after:settings:)``).
        if let next = transfer({ $0.takeRedirect() }) {
            followRedirect(to: next, after: response, settings: settings)
            send(next)
            return
        }
        let inline = mutableState.withLock { state in
            state.transfer.bodyFile == nil && !state.transfer.streamsBody && state.transfer.data.count <= Self.inlineSerializationLimit
                && settings.responseSerializer is any CheapSerialization
        }
        if inline {
            process(response, attempt: attempt, settings: settings).apply(to: self)
        } else {
            // Serialized off the executor; the outcome is an event of the transfer again.
            conveyorProcessingQueue.async {
                let outcome = OneWayTransfer(self.process(response, attempt: attempt, settings: settings))
                self.onExecutor { outcome.value.apply(to: self) }
            }
        }
    }

    /// Bodies up to this size are serialized on the transfer's executor by the built-in
    /// serializers (see `CheapSerialization`); larger ones on the processing queue, so a big
    /// JSON document never holds up the events of the client's other transfers.
    static let inlineSerializationLimit = 16 * 1024

    /// What validating and serializing the final response decided, applied on the executor.
    struct ProcessingOutcome {
        // Not Sendable (a serializer's value is `Any?`): it travels once from the processing
        // queue to the executor in a `OneWayTransfer`.
        enum Kind {
            case none
            case fail(ConveyorError, HTTPResponseHead, retryable: Bool)
            case finish(Result<OneWayTransfer<Any?>, ConveyorError>)
            /// A serializer's value, handed back to a subclass hook if the finish was lost.
            case deliver(Any?)
        }
        let kind: Kind

        func apply(to operation: HTTPRequestOperation) {
            operation.assertOnExecutor()
            switch kind {
            case .none: break
            case .fail(let error, let response, let retryable): operation.fail(error, response: response, retryable: retryable)
            case .finish(let result): operation.finish(result)
            case .deliver(let value):
                if !operation.finish(.success(OneWayTransfer(value))) { operation.successNotDelivered(value) }
            }
        }
    }

    /// Validates and serializes the final response, off the callback queue (see
    /// ``ResponseSerializer`` for the order of the checks).
    func process(_ response: HTTPResponseHead, attempt: Int, settings: ResolvedSettings) -> ProcessingOutcome {
        guard
            let (request, kept, sink, received) = ifCurrent(
                attempt,
                { ($0.transfer.currentRequest, $0.transfer.data, $0.transfer.streamsBody ? $0.outputSink : nil, $0.transfer.bytesReceived) }
            )
        else { return ProcessingOutcome(kind: .none) }
        let (codes, types, serializer) = (settings.acceptableStatusCodes, settings.acceptableContentTypes, settings.responseSerializer)
        // A body written to the output stream is serialized from a memory stream's contents;
        // another stream's bytes are the caller's, and the value is the serializer's empty one.
        let data = sink.map { $0.memoryContents ?? Data() } ?? kept
        let body = data.isEmpty ? nil : data
        guard codes.contains(response.statusCode) else {
            return ProcessingOutcome(
                kind: .fail(
                    .unacceptableStatusCode(response.statusCode, response: response.urlResponse, data: body), response, retryable: true))
        }
        let bodiless = received == 0 && (response.statusCode == 204 || response.statusCode == 205 || request.httpMethod == "HEAD")
        if received > 0, let types, !types.isEmpty, !ContentTypes.matches(response.mimeType, types) {
            return ProcessingOutcome(
                kind: .finish(
                    .failure(.unacceptableContentType(response.mimeType, acceptable: types, response: response.urlResponse, data: body))))
        }
        if let sink, sink.memoryContents == nil {
            return ProcessingOutcome(
                kind: .finish(.success(OneWayTransfer(try? serializer.emptyResponseValue(request: request, response: response)))))
        }
        do {
            let value = try serializeResponse(request: request, response: response, data: data, bodiless: bodiless, serializer: serializer)
            return ProcessingOutcome(kind: .deliver(value))
        } catch let error as ConveyorError {
            return ProcessingOutcome(kind: .finish(.failure(error)))
        } catch {
            return ProcessingOutcome(
                kind: .finish(.failure(.responseSerializationFailed(underlying: error, response: response.urlResponse, data: body))))
        }
    }

    /// Maps what the transport reported into the error the caller sees.
    private func failure(for error: any Error, response: HTTPResponseHead?, idleTimeout: TimeInterval) -> ConveyorError {
        if isCancelled { return .cancelled(reason: cancellationReason) }
        let data = transfer { $0.data.isEmpty ? nil : $0.data }
        // A refused or failed challenge ends the task with an error but leaves the 401 (or
        // 407) in the task's response: that is an authentication failure, not a network one.
        if let response, response.statusCode == 401 || response.statusCode == 407 {
            return .authenticationFailed(response: response.urlResponse, data: data)
        }
        // Transports decide what their errors mean (CurlErrors, URLSessionErrors): a
        // ConveyorError, or a URLError in the shared vocabulary; only the operation's own
        // facts (its idle timeout, a challenge it answered) are added here.
        if let error = error as? ConveyorError { return error }
        if let urlError = error as? URLError {
            if urlError.code == .timedOut { return .timedOut(.idle, after: idleTimeout) }
            if urlError.code == .userAuthenticationRequired || urlError.code == .userCancelledAuthentication {
                return .authenticationFailed(response: response?.urlResponse, data: data)
            }
            return .network(urlError)  // the transport mapped its codes (CurlErrors, URLSessionErrors)
        }
        return .network(URLError(.unknown, userInfo: [NSUnderlyingErrorKey: error as NSError]))
    }
}

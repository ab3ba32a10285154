import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// Stamps `authenticator`'s credential on `request`, or — when it has none to give — waits
    /// for its refresh and calls `send` again. Returns the request to send now, or nil when the
    /// operation waits.
    func authenticated(_ request: URLRequest, by authenticator: any Authenticator) -> URLRequest? {
        // The credential belongs to the origin the operation was made for: a redirect elsewhere
        // (which dropped `Authorization`) does not get it back.
        guard Origin.same(request.url, self.request.url) else {
            transfer { $0.credentialWithheld() }
            return request
        }
        var stamped = request
        if let credentialID = authenticator.apply(to: &stamped) {
            transfer { $0.credentialApplied(credentialID) }
            return stamped
        }
        // How many refreshes one attempt may wait for is the machine's decision.
        switch transfer({ $0.credentialWaitBegins(maximumWaits: Self.maximumCredentialWaits) }) {
        case .none: break
        case .wait: waitForCredential(from: authenticator, replacing: nil)
        case .giveUp(let refreshes):
            fail(.credentialRefreshFailed(reason: .noUsableCredential(refreshes: refreshes)), response: nil, retryable: false)
        }
        return nil
    }

    /// Refreshes one attempt may wait for before it fails (see ``authenticated(_:by:)``).
    static let maximumCredentialWaits = 3

    /// Called with each final response head (and with the response of a task that failed on a
    /// refused challenge): a refusal of the credential this attempt carried parks the operation
    /// on the authenticator's refresh and replays the request once. Returns whether it did.
    func replayAfterCredentialRefresh(_ response: HTTPResponseHead, attempt: Int, authenticator: (any Authenticator)?) -> Bool {
        // The authenticator is the caller's code: asked outside the lock.
        guard let authenticator, transfer({ $0.mayReplay(attempt: attempt) }), authenticator.requiresRefresh(response) else { return false }
        // The rest of this attempt is not listened to; a replay, not a retry: `retryCount` stays.
        guard case .replay(let task, let credentialID) = transfer({ $0.replayBegins(attempt: attempt) }) else { return false }
        task?.cancel()
        waitForCredential(from: authenticator, replacing: credentialID)
        return true
    }

    /// Parks the operation on the authenticator's (shared) refresh; sends the current request
    /// again when it succeeds, fails with its error otherwise. A cancelled or paused operation
    /// is not sent (``send(_:)`` checks).
    private func waitForCredential(from authenticator: any Authenticator, replacing credentialID: String?) {
        authenticator.refresh(replacing: credentialID) { [weak self] result in
            // The refresh ends on any thread: its answer is an event of the transfer.
            guard let self else { return }
            self.onExecutor {
                switch result {
                case .success: self.send(self.currentRequest)
                case .failure(let error): self.fail(error, response: nil, retryable: false)
                }
            }
        }
    }
}

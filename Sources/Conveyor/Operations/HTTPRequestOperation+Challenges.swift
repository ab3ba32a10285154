import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Decides how to answer an authentication challenge. Whatever it returns, the challenge is
/// answered definitively: on Linux `.performDefaultHandling` would hang a 401 forever, so
/// Conveyor turns it into "use the operation's credential once, else cancel".
public typealias AuthenticationChallengeHandler =
    @Sendable (URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?)

extension HTTPRequestOperation {
    /// The answer to a challenge, for both transports; the credential it sends is registered
    /// for masking (`user:password`, its base64 and the password) and held until the operation
    /// finishes.
    func disposition(
        for challenge: URLAuthenticationChallenge, settings: ResolvedSettings
    ) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let answer = chosenDisposition(for: challenge, handler: settings.challengeHandler, credential: settings.credential)
        if answer.0 == .useCredential, let credential = answer.1, let password = credential.password {
            pinSecrets(SentSecrets.basicParts(user: credential.user ?? "", password: password))
        }
        return answer
    }

    /// Pins `values` in ``SentSecrets`` for the rest of the operation (at once released again
    /// when it has finished meanwhile: nobody would unpin them).
    func pinSecrets(_ values: [String]) {
        guard !values.isEmpty else { return }
        SentSecrets.shared.pin(values)
        if !transfer({ $0.secretsPinned(values) }) { SentSecrets.shared.unpin(values) }
    }

    private func chosenDisposition(
        for challenge: URLAuthenticationChallenge, handler: AuthenticationChallengeHandler?, credential: URLCredential?
    ) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        if let handler {
            let (disposition, chosen) = handler(challenge)
            switch disposition {
            case .useCredential where chosen != nil:
                return Self.isSendable(chosen!, for: challenge) ? (.useCredential, chosen) : (.cancelAuthenticationChallenge, nil)
            case .cancelAuthenticationChallenge, .rejectProtectionSpace: return (.cancelAuthenticationChallenge, nil)
            default: break  // fall through to the operation's own credential
            }
        }
        // The operation's (or its client's default) credential belongs to the origin the
        // operation was made for: a challenge from elsewhere — after a redirect to another host
        // or port — never receives it.
        if challenge.previousFailureCount == 0, let credential, Origin.same(challenge.protectionSpace, request.url),
            Self.isSendable(credential, for: challenge)
        {
            return (.useCredential, credential)
        }
        return (.cancelAuthenticationChallenge, nil)
    }

    /// Whether `credential` can be sent without rewriting the `Authorization` header: no control
    /// characters in the user name or password (a CR/LF would inject a header into a Digest
    /// answer), and no `:` in a Basic user name (RFC 7617: it would split user and password anew).
    static func isSendable(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) -> Bool {
        let user = credential.user ?? ""
        let password = credential.password ?? ""
        let control = { (byte: UInt8) in byte < 0x20 || byte == 0x7F }
        if user.utf8.contains(where: control) || password.utf8.contains(where: control) { return false }
        let isBasic = challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodHTTPBasic
        return !(isBasic && user.contains(":"))
    }
}

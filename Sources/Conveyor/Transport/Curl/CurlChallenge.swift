#if os(Linux)
    import Foundation
    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// Builds the `URLAuthenticationChallenge` a 401 or 407 stands for, so the curl transport
    /// asks the same question (through ``TransportTaskDelegate/transportDisposition(for:)``) that
    /// URLSession asks, and an ``AuthenticationChallengeHandler`` works with either transport.
    enum CurlChallenge {
        /// Whether a challenge's scheme is one a credential can answer (Basic, Digest, NTLM,
        /// Negotiate) — the ones URLSession asks its delegate about. A 401 with any other
        /// scheme (`Bearer`) is an ordinary response, as it is on URLSession: it fails
        /// validation with ``ConveyorError/unacceptableStatusCode(_:response:data:)`` and its body.
        static func isAnswerable(_ line: String) -> Bool {
            let scheme = line.split(separator: " ").first.map { $0.lowercased() } ?? ""
            return ["basic", "digest", "ntlm", "negotiate"].contains(scheme.trimmingCharacters(in: CharacterSet(charactersIn: ",")))
        }

        /// - Parameters:
        ///   - line: The first `WWW-Authenticate` (or `Proxy-Authenticate`) value.
        ///   - url: The request's URL.
        ///   - isProxy: Whether the proxy asks (407).
        ///   - failures: How many credentials were already refused for this request.
        ///   - response: The 401/407.
        static func make(line: String, url: URL, isProxy: Bool, failures: Int, response: HTTPURLResponse) -> URLAuthenticationChallenge {
            let scheme = line.split(separator: " ").first.map { $0.lowercased() } ?? ""
            let method: String
            switch scheme {
            case "basic": method = NSURLAuthenticationMethodHTTPBasic
            case "digest": method = NSURLAuthenticationMethodHTTPDigest
            case "ntlm": method = NSURLAuthenticationMethodNTLM
            case "negotiate": method = NSURLAuthenticationMethodNegotiate
            default: method = NSURLAuthenticationMethodDefault
            }
            // The port as ``Origin`` has it (the scheme's default when the URL names none), so the
            // challenge compares equal to the request's origin.
            let space = URLProtectionSpace(
                host: url.host ?? "", port: url.port ?? Origin.defaultPort(of: url.scheme?.lowercased() ?? ""),
                protocol: url.scheme?.lowercased(), realm: realm(in: line),
                authenticationMethod: method)
            return URLAuthenticationChallenge(
                protectionSpace: space, proposedCredential: nil, previousFailureCount: failures, failureResponse: response,
                error: nil, sender: ChallengeSender())
        }

        /// The `realm` parameter of a challenge, quoted or not.
        static func realm(in line: String) -> String? {
            guard let range = line.range(of: "realm=", options: .caseInsensitive) else { return nil }
            var rest = line[range.upperBound...]
            if rest.first == "\"" {
                rest = rest.dropFirst()
                return String(rest.prefix { $0 != "\"" })
            }
            return String(rest.prefix { $0 != "," && $0 != " " })
        }

        /// The challenge's sender: the transport reads the delegate's answer from its return
        /// value, so the sender's methods have nothing to do.
        private final class ChallengeSender: NSObject, URLAuthenticationChallengeSender {
            func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
            func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
            func cancel(_ challenge: URLAuthenticationChallenge) {}
            func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
            func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
        }
    }
#endif

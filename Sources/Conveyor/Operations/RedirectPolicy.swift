import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which HTTP redirects an operation follows.
///
/// Conveyor follows redirects itself rather than letting URLSession do it, so they behave the
/// same on every platform: 301/302 turn a POST into a GET and 303 turns anything but HEAD into
/// a GET (the body is dropped); 307/308 keep the method and the body (URLSession on Linux drops
/// the body on every redirect). The headers in ``headersRemovedAcrossOrigins`` — the credential
/// headers (``HTTPHeaders/credentialNames``) by default — are removed when a redirect leaves the
/// original scheme, host and port (https to http included). Other headers follow the redirect:
/// add a custom credential header (`X-Tenant-Secret`) to that set so it stays with its origin.
public struct RedirectPolicy: Sendable {
    /// Sees each hop before it is followed: returns the request to send (possibly modified),
    /// or nil to refuse the hop, making the 3xx the response. Called when the 3xx head arrives,
    /// on the transfer's executor, before its body is read: a refused hop's head and body then go
    /// where a response's go (the response block, ``HTTPRequestOperation/outputStream``, the chunk
    /// block).
    public typealias Handler = @Sendable (_ next: URLRequest, _ redirect: HTTPResponseHead) -> URLRequest?

    /// The most redirects followed for one operation; 0 follows none (the 3xx is the response).
    public var maximumRedirects: Int
    /// Consulted for every hop after Conveyor's own rules; nil follows every hop.
    public var handler: Handler?
    /// The request headers removed when a redirect leaves the origin (scheme, host, port).
    /// Default ``defaultHeadersRemovedAcrossOrigins``; names compare case-insensitively.
    public var headersRemovedAcrossOrigins: Set<String> = RedirectPolicy.defaultHeadersRemovedAcrossOrigins

    /// The credential headers every policy removes across origins unless told otherwise:
    /// ``HTTPHeaders/credentialNames`` (`Authorization`, `Proxy-Authorization`, `Cookie`,
    /// `X-API-Key`, `X-Auth-Token`), the set the logger's redaction hides too.
    public static let defaultHeadersRemovedAcrossOrigins: Set<String> = HTTPHeaders.credentialNames

    /// Creates a policy.
    /// - Parameters:
    ///   - maximumRedirects: The limit.
    ///   - handler: Sees, modifies or refuses each hop; nil follows every hop.
    public init(maximumRedirects: Int, handler: Handler? = nil) {
        self.maximumRedirects = maximumRedirects
        self.handler = handler
    }

    /// Follows at most `max` redirects; one more fails with ``ConveyorError/redirectFailed(reason:)``.
    /// - Parameters:
    ///   - max: The limit.
    ///   - handler: Sees, modifies or refuses each hop; default nil.
    /// - Returns: The policy.
    public static func follow(max: Int, handler: Handler? = nil) -> RedirectPolicy {
        RedirectPolicy(maximumRedirects: max, handler: handler)
    }

    /// Follows none: a 3xx response is validated like any other (and so fails with the default
    /// acceptable status codes).
    public static let none = RedirectPolicy(maximumRedirects: 0)

    /// Follows up to 16 redirects, the limit browsers and curl's default of 50 bracket.
    public static let `default` = RedirectPolicy(maximumRedirects: 16)
}

extension HTTPRequestOperation {
    static let redirectStatusCodes: Set<Int> = [301, 302, 303, 307, 308]

    /// Where `response` leads: the request to send next when it is a redirect to follow, nil
    /// when it is the response (not a 3xx, no redirects allowed, or the handler refused the
    /// hop). Decided once, when the head arrives, so the head and body of a refused hop go
    /// where any response's go; the hop itself is made by ``followRedirect(to:after:settings:)``
    /// once the 3xx body is read.
    /// - Throws: ``ConveyorError/redirectFailed(reason:)`` for a `Location` that cannot be
    ///   followed, or one redirect too many.
    func redirectRoute(after response: HTTPResponseHead, settings: ResolvedSettings) throws(ConveyorError) -> URLRequest? {
        guard Self.redirectStatusCodes.contains(response.statusCode) else { return nil }
        let policy = settings.redirectPolicy
        guard policy.maximumRedirects > 0 else { return nil }
        let (current, count) = transfer { ($0.currentRequest, $0.redirectCount) }
        let location = response.value(forHTTPHeaderField: "Location")
        // A Unix socket is reached only from its own origin: a server on the network must not
        // be able to send the client to a local daemon's socket (`/var/run/docker.sock`).
        guard let location, let target = URL(string: location, relativeTo: response.url)?.absoluteURL,
            let scheme = target.scheme?.lowercased(),
            scheme == "http" || scheme == "https" || (UnixSocketURL.isUnixSocket(target) && Origin.same(current.url, target))
        else {
            throw ConveyorError.redirectFailed(reason: .invalidLocation(location, response: response.urlResponse))
        }
        guard count < policy.maximumRedirects else {
            throw ConveyorError.redirectFailed(reason: .tooManyRedirects(max: policy.maximumRedirects, response: response.urlResponse))
        }
        var next = current
        next.url = Self.unmappingIPv4(target)
        let method = HTTPMethod(rawValue: current.httpMethod ?? "GET")
        let becomesGET =
            (response.statusCode == 303 && method != .head)
            || ((response.statusCode == 301 || response.statusCode == 302) && method == .post)
        if becomesGET {
            next.httpMethod = "GET"
            next.httpBody = nil
            for name in ["Content-Type", "Content-Length", "Content-Encoding"] {
                next.setHeader(nil, for: name)
            }
        }
        if !Origin.same(current.url, target) {
            for name in policy.headersRemovedAcrossOrigins {
                next.setHeader(nil, for: name)
            }
        }
        if let handler = policy.handler {
            guard let approved = handler(next, response) else { return nil }
            next = approved
        }
        return next
    }

    /// Makes the hop ``redirectRoute(after:settings:)`` decided on: counts it and tells the
    /// event monitors; the caller sends `next`.
    func followRedirect(to next: URLRequest, after response: HTTPResponseHead, settings: ResolvedSettings) {
        transfer { $0.redirectFollowed() }
        settings.hooks?.monitors?.post(self) { [next] in $0.request(self, willRedirectTo: next, after: response) }
    }

    /// `url` with an IPv4-mapped IPv6 host (`[::ffff:127.0.0.1]`, `[::ffff:7f00:1]`) written as
    /// the IPv4 address it is: corelibs URLSession refuses such a host (-1000) where libcurl
    /// connects, and both transports must follow the same redirects.
    static func unmappingIPv4(_ url: URL) -> URL {
        guard let host = url.host?.lowercased(), host.hasPrefix("::ffff:") else { return url }
        let tail = host.dropFirst("::ffff:".count)
        let ipv4: String
        if tail.split(separator: ".").count == 4, tail.split(separator: ".").allSatisfy({ UInt8($0) != nil }) {
            ipv4 = String(tail)
        } else {
            let groups = tail.split(separator: ":", omittingEmptySubsequences: false).compactMap { UInt16($0, radix: 16) }
            guard groups.count == 2, tail.split(separator: ":", omittingEmptySubsequences: false).count == 2 else { return url }
            ipv4 = [groups[0] >> 8, groups[0] & 0xFF, groups[1] >> 8, groups[1] & 0xFF].map(String.init).joined(separator: ".")
        }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.host = ipv4
        return components.url ?? url
    }

}

import Foundation

extension HTTPClient {
    /// How a client's requests reach the network: through the proxies the environment names
    /// (the default), directly, or through one proxy of the client's own.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration()
    /// configuration.proxy = .http(host: "proxy.corp.example", port: 3128, credentials: .init(user: "me", password: secret))
    /// configuration.proxy.bypassedHosts += [".corp.example", "10.0.0.0/8"]
    /// ```
    ///
    /// An HTTP proxy receives plain `http` requests to forward and opens a tunnel (`CONNECT`)
    /// for `https` ones; an HTTPS proxy is the same over TLS to the proxy; SOCKS5 carries every
    /// request, the proxy resolving the host names (`socks5h`). Credentials go to the proxy alone
    /// — never to an origin — and a tunnelled request's own credentials (its `Authorization`,
    /// cookies) never go to the proxy: they travel inside the tunnel. A plain `http` request
    /// through an HTTP proxy is read by the proxy whole, as HTTP requires; use `https` for
    /// anything secret. Credentials are masked in every text Conveyor emits.
    ///
    /// The curl transport honours every kind. The URLSession transport on Linux cannot:
    /// corelibs FoundationNetworking ignores `connectionProxyDictionary` (its libcurl handle is
    /// given no proxy options, so only the environment's proxy variables apply), so a client
    /// with ``none`` while the environment names a proxy, or with a proxy of its own, fails
    /// every request with ``ConveyorError/RouteFailureReason/unsupportedByTransport(feature:transport:)``.
    public struct Proxy: Sendable, Equatable, CustomStringConvertible {
        /// The protocol spoken to a proxy.
        public enum Kind: String, Sendable, CaseIterable {
            /// HTTP: plain requests forwarded, `https` tunnelled with `CONNECT`.
            case http
            /// HTTP over TLS to the proxy; its certificate is checked with the client's
            /// ``HTTPClient/Configuration/tls`` (authorities and the validation switch, not pins).
            case https
            /// SOCKS5, with the proxy resolving host names (`socks5h`): the client asks no DNS.
            case socks5
        }

        /// A user name and password for a proxy. `description` never shows the password.
        public struct Credentials: Sendable, Equatable, CustomStringConvertible {
            /// The user name.
            public var user: String
            /// The password.
            public var password: String

            /// Creates credentials.
            /// - Parameters:
            ///   - user: The user name.
            ///   - password: The password.
            public init(user: String, password: String) {
                self.user = user
                self.password = password
            }

            /// `user:<redacted>`.
            public var description: String { "\(user):<redacted>" }
        }

        /// One proxy server.
        public struct Server: Sendable, Equatable, CustomStringConvertible {
            /// The protocol spoken to it.
            public var kind: Kind
            /// Its host name or address.
            public var host: String
            /// Its port.
            public var port: Int

            /// `kind://host:port` (`socks5h://` for SOCKS5), the form libcurl takes.
            public var description: String {
                let scheme = kind == .socks5 ? "socks5h" : kind.rawValue
                let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
                return "\(scheme)://\(bracketed):\(port)"
            }
        }

        private enum Route: Equatable {
            case direct
            case environment
            case server(Server)
        }

        private let route: Route
        /// The proxy's credentials, sent to it alone; nil for none. Default nil.
        public var credentials: Credentials?
        /// Hosts reached directly rather than through ``server``: names (`localhost`), domains
        /// (`.corp.example` or `corp.example`: the domain and every name under it), IPv4 and
        /// IPv6 addresses, IPv4 CIDR ranges (`10.0.0.0/8`; libcurl matches no IPv6 range, so one
        /// is refused), `*` for every host; no ports (an entry covers every port). A numeric host
        /// is compared as an address, an IPv4 address mapped into IPv6 as the IPv4 address
        /// (`[::ffff:7f00:1]` is `127.0.0.1`), whatever its spelling. Default
        /// ``defaultBypassedHosts``. Ignored by ``none`` and ``environment`` (whose list is
        /// `no_proxy`).
        public var bypassedHosts: [String] = Self.defaultBypassedHosts

        /// `localhost` and the loopback addresses (IPv4, IPv6, and IPv4 loopback mapped into IPv6):
        /// a local server is never reached through a proxy unless the list says otherwise.
        public static let defaultBypassedHosts = ["localhost", "127.0.0.0/8", "::1", "::ffff:127.0.0.1"]

        private init(route: Route, credentials: Credentials? = nil) {
            self.route = route
            self.credentials = credentials
        }

        /// No proxy, whatever the environment says.
        public static let none = Proxy(route: .direct)
        /// The proxies the environment names (`http_proxy`, `https_proxy`, `all_proxy`,
        /// `no_proxy`, as curl reads them). The default.
        public static let environment = Proxy(route: .environment)

        /// An HTTP proxy.
        /// - Parameters:
        ///   - host: Its host name or address.
        ///   - port: Its port; default 3128 (Squid's).
        ///   - credentials: Its user name and password; nil (the default) for none.
        /// - Returns: The proxy.
        public static func http(host: String, port: Int = 3128, credentials: Credentials? = nil) -> Proxy {
            Proxy(route: .server(Server(kind: .http, host: host, port: port)), credentials: credentials)
        }

        /// An HTTPS proxy: HTTP to the proxy over TLS.
        /// - Parameters:
        ///   - host: Its host name or address.
        ///   - port: Its port; default 443.
        ///   - credentials: Its user name and password; nil (the default) for none.
        /// - Returns: The proxy.
        public static func https(host: String, port: Int = 443, credentials: Credentials? = nil) -> Proxy {
            Proxy(route: .server(Server(kind: .https, host: host, port: port)), credentials: credentials)
        }

        /// A SOCKS5 proxy that resolves host names itself (`socks5h`).
        /// - Parameters:
        ///   - host: Its host name or address.
        ///   - port: Its port; default 1080.
        ///   - credentials: Its user name and password (RFC 1929); nil (the default) for none.
        /// - Returns: The proxy.
        public static func socks5(host: String, port: Int = 1080, credentials: Credentials? = nil) -> Proxy {
            Proxy(route: .server(Server(kind: .socks5, host: host, port: port)), credentials: credentials)
        }

        /// A proxy from its URL, as `http_proxy` spells one: `http://proxy:3128`,
        /// `https://user:password@proxy`, `socks5://proxy:1080` or `socks5h://…` (both resolve
        /// names at the proxy). Credentials in the URL become ``credentials``.
        /// - Parameter url: The proxy's URL.
        /// - Throws: ``ConveyorError/RouteFailureReason/invalidProxy(_:detail:)`` for another
        ///   scheme, a missing host or a port outside 1...65535.
        public init(url: String) throws(ConveyorError) {
            let shown = Self.redactingUserInfo(url)
            guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
                throw .routeFailed(reason: .invalidProxy(shown, detail: "it is not a URL"))
            }
            let kinds: [String: (Kind, Int)] = [
                "http": (.http, 3128), "https": (.https, 443), "socks5": (.socks5, 1080), "socks5h": (.socks5, 1080),
            ]
            guard let (kind, defaultPort) = kinds[scheme] else {
                throw .routeFailed(reason: .invalidProxy(shown, detail: "the scheme \(scheme) is not http, https, socks5 or socks5h"))
            }
            guard let host = components.host, !host.isEmpty else {
                throw .routeFailed(reason: .invalidProxy(shown, detail: "it names no host"))
            }
            // URLComponents' user and password are already percent-decoded.
            let credentials = components.user.map { Credentials(user: $0, password: components.password ?? "") }
            self.init(route: .server(Server(kind: kind, host: host, port: components.port ?? defaultPort)), credentials: credentials)
            if let problem { throw .routeFailed(reason: .invalidProxy(shown, detail: problem)) }
        }

        /// The proxy server, nil for ``none`` and ``environment``.
        public var server: Server? {
            if case .server(let server) = route { return server }
            return nil
        }

        /// Whether this is ``none``: no proxy, whatever the environment says.
        public var isNone: Bool { route == .direct }

        /// `none`, `environment`, or the server (credentials never shown).
        public var description: String {
            switch route {
            case .direct: return "none"
            case .environment: return "environment"
            case .server(let server): return credentials.map { "\(server) as \($0.user)" } ?? server.description
            }
        }

        /// What is wrong with the proxy, or nil when libcurl can take it as it is.
        var problem: String? {
            guard let server else { return nil }
            if server.host.isEmpty
                || server.host.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || "/@?#".unicodeScalars.contains($0) }
                )
            {
                return "the host \"\(server.host)\" is not a host name"
            }
            guard (1...65535).contains(server.port) else { return "the port \(server.port) is not 1...65535" }
            if let entry = bypassedHosts.first(where: { $0.isEmpty || $0.unicodeScalars.contains { $0.value <= 0x20 || $0 == "," } }) {
                return "the bypassed host \"\(entry)\" is empty or holds a comma or whitespace"
            }
            for entry in bypassedHosts {
                if let problem = Self.problem(ofBypassEntry: entry) { return problem }
            }
            return nil
        }

        /// What is wrong with one bypass entry (found by the independent attack: these were
        /// accepted and silently ignored): a port (the list names hosts), a CIDR prefix longer
        /// than its address.
        private static func problem(ofBypassEntry entry: String) -> String? {
            let bare = entry.hasPrefix("[") && entry.hasSuffix("]") ? String(entry.dropFirst().dropLast()) : entry
            let parts = bare.split(separator: "/", omittingEmptySubsequences: false)
            if parts.count > 2 { return "the bypassed host \"\(entry)\" is not a host, domain, address or CIDR range" }
            let address = String(parts[0])
            let isIPv6 = address.contains(":") && AddressOverride.numericAddress(address) != nil
            if !isIPv6, address.contains(":") {
                return "the bypassed host \"\(entry)\" names a port: the list names hosts, every port of each"
            }
            guard parts.count == 2 else { return nil }
            let maximum = isIPv6 ? 128 : 32
            guard AddressOverride.numericAddress(address) != nil, let prefix = Int(parts[1]), (0...maximum).contains(prefix) else {
                return "the bypassed range \"\(entry)\" is not an address with a prefix of 0...\(maximum) bits"
            }
            // libcurl 7.88 matches no IPv6 range (measured: `::1/128` was proxied): refused rather
            // than silently sending those hosts through the proxy.
            if isIPv6, prefix < 128 {
                return "the bypassed range \"\(entry)\" is an IPv6 range, which libcurl does not match: list the addresses"
            }
            return nil
        }

        /// The bypass list as libcurl's `CURLOPT_NOPROXY` takes it: brackets dropped from IPv6, a
        /// range of one address (`::1/128`, which libcurl 7.88 ignores) as that address, and a
        /// `*` anywhere in the list as the list (libcurl honours `*` only when it stands alone).
        var noProxyList: String {
            if bypassedHosts.contains("*") { return "*" }
            return bypassedHosts.map { entry -> String in
                var bare = entry.hasPrefix("[") && entry.hasSuffix("]") ? String(entry.dropFirst().dropLast()) : entry
                if bare.hasSuffix("/128") || (bare.hasSuffix("/32") && !bare.contains(":")) { bare = String(bare.prefix { $0 != "/" }) }
                return bare
            }.joined(separator: ",")
        }

        /// `url` with any password replaced, for error messages.
        private static func redactingUserInfo(_ url: String) -> String {
            guard var components = URLComponents(string: url), components.password != nil else { return url }
            components.password = "redacted"
            return components.string ?? url
        }
    }
}

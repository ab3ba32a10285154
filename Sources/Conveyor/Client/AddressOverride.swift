import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension HTTPClient {
    /// Where connections to one host and port go instead of where DNS says: `curl --resolve`.
    ///
    /// For tests that must send `api.example.com` to 127.0.0.1, and for deployments pinned to
    /// known addresses. Only the connection changes: the URL, the `Host` field, cookies, the
    /// cache's keys and TLS are still the host's — a certificate must be valid for `host`, not
    /// for the address.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration()
    /// configuration.resolve = [.init(host: "api.example.com", port: 443, addresses: ["127.0.0.1"])]
    /// ```
    public struct AddressOverride: Sendable, Hashable, CustomStringConvertible {
        /// The host name as URLs spell it (case does not matter).
        public var host: String
        /// The port the override applies to (1...65535): `443` for `https` URLs without one,
        /// `80` for `http`.
        public var port: Int
        /// IPv4 or IPv6 addresses (with or without brackets), tried in order.
        public var addresses: [String]

        /// Creates an override.
        /// - Parameters:
        ///   - host: The host name as URLs spell it.
        ///   - port: The port it applies to, 1...65535.
        ///   - addresses: IPv4 or IPv6 addresses, tried in order.
        public init(host: String, port: Int, addresses: [String]) {
            self.host = host
            self.port = port
            self.addresses = addresses
        }

        /// `host:port:address,address`, as `curl --resolve` takes it.
        public var description: String { "\(host):\(port):\(addresses.joined(separator: ","))" }

        /// What is wrong with the entry, or nil when libcurl can take it as it is.
        var problem: String? {
            // A `:` or `,` in the host would shift the fields of libcurl's `host:port:addresses`
            // text (an injected second address); whitespace and controls are never in a host.
            let forbidden = { (scalar: Unicode.Scalar) in
                ":,[]".unicodeScalars.contains(scalar) || scalar.value <= 0x20 || scalar.value == 0x7F
            }
            if host.isEmpty || host.unicodeScalars.contains(where: forbidden) {
                return "the host \"\(host)\" is not a host name"
            }
            // libcurl reads a leading `-` as "remove this entry", `+` as "add it later", and a
            // `*` host as every host (found by the independent attack): none is a host name.
            if let first = host.unicodeScalars.first, "-+*".unicodeScalars.contains(first) || host.contains("*") {
                return "the host \"\(host)\" is not a host name (a leading - or +, or a *, means something else to libcurl)"
            }
            guard (1...65535).contains(port) else { return "the port \(port) is not 1...65535" }
            guard !addresses.isEmpty else { return "it lists no address" }
            for address in addresses where Self.numericAddress(address) == nil {
                return "\"\(address)\" is not an IPv4 or IPv6 address"
            }
            return nil
        }

        /// The entry as libcurl's `CURLOPT_RESOLVE` takes it: IPv6 addresses in brackets.
        var curlEntry: String {
            let formatted = addresses.compactMap { Self.numericAddress($0) }.map { $0.contains(":") ? "[\($0)]" : $0 }
            return "\(host):\(port):\(formatted.joined(separator: ","))"
        }

        /// Whether the override applies to `url`'s host and port.
        func applies(to url: URL) -> Bool {
            guard let urlHost = url.host, let scheme = url.scheme?.lowercased() else { return false }
            return urlHost.lowercased() == host.lowercased() && (url.port ?? Origin.defaultPort(of: scheme)) == port
        }

        /// `text` without brackets when it is a numeric IPv4 or IPv6 address; nil otherwise.
        static func numericAddress(_ text: String) -> String? {
            var bare = Substring(text)
            if bare.hasPrefix("["), bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
            let candidate = String(bare)
            var v4 = in_addr()
            var v6 = in6_addr()
            if inet_pton(AF_INET, candidate, &v4) == 1 || inet_pton(AF_INET6, candidate, &v6) == 1 { return candidate }
            return nil
        }
    }
}

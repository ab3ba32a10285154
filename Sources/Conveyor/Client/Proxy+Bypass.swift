import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension HTTPClient.Proxy {
    /// Whether a request to `host` goes directly rather than through ``server``: the one place
    /// the bypass list is decided. A numeric host is compared as an address with every address
    /// and range of ``bypassedHosts`` — an IPv4 address mapped into IPv6 as the IPv4 address,
    /// however it is spelled (`[::ffff:7f00:1]`, `[::ffff:127.0.0.2]`: string matching sent
    /// these loopback addresses to the proxy); a name is matched as a name or under a domain.
    /// - Parameter host: The URL's host, IPv6 with or without brackets.
    func bypasses(host: String) -> Bool {
        if bypassedHosts.contains("*") { return true }
        if let address = Address(host) {
            return bypassedHosts.contains { entry in Address.Range(entry).map { $0.contains(address) } ?? false }
        }
        // A name's trailing dot (`example.com.`) and an entry's leading one (`.corp.example`) say
        // the same name and domain as without.
        let name = Self.trimmedDots(host)
        return bypassedHosts.contains { entry in
            guard Address.Range(entry) == nil else { return false }
            let domain = Self.trimmedDots(entry)
            return !domain.isEmpty && (name == domain || name.hasSuffix("." + domain))
        }
    }

    private static func trimmedDots(_ text: String) -> String {
        var trimmed = Substring(text.lowercased())
        if trimmed.hasPrefix(".") { trimmed = trimmed.dropFirst() }
        if trimmed.hasSuffix(".") { trimmed = trimmed.dropLast() }
        return String(trimmed)
    }

    /// A numeric address: 4 bytes for IPv4 (IPv4-mapped IPv6 included), 16 for IPv6.
    struct Address: Equatable {
        let bytes: [UInt8]

        init?(_ text: String) {
            var bare = Substring(text)
            if bare.hasPrefix("["), bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
            // An IPv6 zone (`::1%lo`, `%25lo` in a URL) names an interface, not another address.
            if bare.contains(":"), let zone = bare.firstIndex(of: "%") { bare = bare[..<zone] }
            // A numeric host's trailing dot (`127.0.0.1.`) is the same address.
            if !bare.contains(":"), bare.hasSuffix(".") { bare = bare.dropLast() }
            let candidate = String(bare)
            var v4 = in_addr()
            var v6 = in6_addr()
            // IPv4 as libcurl and the resolver read it (inet_aton): `127.1`, `2130706433`,
            // `0x7f000001`, `0177.0.0.1` are 127.0.0.1, and libcurl connects to them directly
            // (the attack on issue 58 saw such requests go direct while the metrics said "via").
            // Only digits, dots and hex letters: inet_aton ignores whatever follows a space.
            let ipv4Characters = candidate.allSatisfy { $0.isHexDigit || $0 == "." || $0 == "x" || $0 == "X" }
            if !candidate.isEmpty, ipv4Characters, inet_aton(candidate, &v4) != 0 {
                bytes = withUnsafeBytes(of: &v4) { Array($0) }
            } else if inet_pton(AF_INET6, candidate, &v6) == 1 {
                let all = withUnsafeBytes(of: &v6) { Array($0) }
                bytes = Self.isMapped(all) ? Array(all[12...]) : all
            } else {
                return nil
            }
        }

        /// `::ffff:a.b.c.d`: ten zero bytes, then two 0xff.
        static func isMapped(_ bytes: [UInt8]) -> Bool {
            bytes.count == 16 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        }

        /// An address with a prefix length: a bypass entry (`127.0.0.0/8`, `::1`, `[::ffff:10.0.0.0]/104`).
        struct Range: Equatable {
            let address: Address
            let prefix: Int

            init?(_ entry: String) {
                let parts = entry.split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count <= 2, let address = Address(String(parts[0])) else { return nil }
                let written = parts.count == 2 ? Int(parts[1]) : nil
                if parts.count == 2, written == nil { return nil }
                // A mapped IPv6 range's prefix counts the 96 bits before the IPv4 address.
                let mapped = parts[0].contains(":") && address.bytes.count == 4
                let prefix = written.map { mapped ? $0 - 96 : $0 } ?? address.bytes.count * 8
                guard (0...address.bytes.count * 8).contains(prefix) else { return nil }
                (self.address, self.prefix) = (address, prefix)
            }

            func contains(_ other: Address) -> Bool {
                guard other.bytes.count == address.bytes.count else { return false }
                var left = prefix
                for (mine, theirs) in zip(address.bytes, other.bytes) where left > 0 {
                    let bits = min(8, left)
                    let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                    if mine & mask != theirs & mask { return false }
                    left -= bits
                }
                return true
            }
        }
    }
}

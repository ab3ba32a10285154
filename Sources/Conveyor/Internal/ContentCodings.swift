/// The content codings the transports decode (RFC 9110 §8.4.1): libcurl's `gzip`, `deflate`, `br`
/// and `zstd` (with `x-gzip` and `identity`). A body with any other coding is handed over as it
/// arrived, its `Content-Encoding` saying so, as browsers do.
enum ContentCodings {
    #if canImport(Darwin)
        /// Apple's URLSession decodes `gzip`, `deflate` and `br`, not `zstd`: a `zstd` body stays
        /// encoded there, and its `Content-Encoding` must stay with it.
        static let decodable: Set<String> = ["identity", "gzip", "x-gzip", "deflate", "br"]
    #else
        static let decodable: Set<String> = ["identity", "gzip", "x-gzip", "deflate", "br", "zstd"]
    #endif

    /// Whether every coding a `Content-Encoding` value lists (empty: none) is decoded.
    static func areDecodable(_ field: String) -> Bool {
        field.split(separator: ",").allSatisfy { decodable.contains($0.trimmingCharacters(in: .whitespaces).lowercased()) }
    }

    /// Whether every transfer coding a `Transfer-Encoding` value lists (empty: none) is one
    /// libcurl decodes: `chunked` (framing, handled apart) or a content coding it knows.
    static func areDecodableTransferCodings(_ field: String) -> Bool {
        field.split(separator: ",").allSatisfy { coding in
            let name = coding.trimmingCharacters(in: .whitespaces).lowercased()
            return name == "chunked" || decodable.contains(name)
        }
    }
}

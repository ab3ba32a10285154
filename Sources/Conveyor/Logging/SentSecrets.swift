import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The credential values Conveyor has sent, so that text it emits can hide them by value, as
/// CI systems mask registered secrets: name-based rules miss a token echoed in a response
/// body, or one inside a URL-valued query parameter (`to=ftp://x/?token=…`).
///
/// What is remembered, from each request as sent: the values of credential headers
/// (`Authorization`, `Proxy-Authorization`, `Cookie`, `X-API-Key`, `X-Auth-Token`, and those
/// in ``RedirectPolicy/defaultHeadersRemovedAcrossOrigins``), the token after an auth scheme,
/// the decoded `user:password` of Basic and its password, each cookie value, and query and
/// form values with secret names. The set is bounded: the ``capacity`` most recent values.
final class SentSecrets: Sendable {
    // Sendable: the mutable state is `state`, behind one Lock.
    static let shared = SentSecrets()

    /// Values remembered at most: the oldest are forgotten first.
    static let capacity = 256
    /// Values shorter than this are not masked: masking "ab" everywhere would garble any text
    /// and reveal more (by its gaps) than it hides.
    static let minimumLength = 4

    private struct State {
        var order: [String] = []
        var members: Set<String> = []
    }
    private let state = Lock(State())

    private static let headerNames = ["authorization", "proxy-authorization", "cookie", "x-api-key", "x-auth-token"]
    private static let secretNames = Redaction()

    /// Remembers the credential values `request` carries.
    /// - Parameters:
    ///   - request: The request as sent.
    ///   - fields: Its header fields (the caller has them already: it runs for every request).
    func register(_ request: URLRequest, fields: [String: String]) {
        var values: [String] = []
        var contentType: String?
        for (name, value) in fields {
            // Compared in place: lower-casing every name allocated on every request.
            if let header = Self.headerNames.first(where: name.equalsIgnoringASCIICase) {
                values.append(contentsOf: Self.credentialParts(of: value, header: header))
            } else if name.equalsIgnoringASCIICase("Content-Type") {
                contentType = value
            }
        }
        if let query = request.url?.query, Self.mayHoldSecret(query) {
            values.append(contentsOf: Self.secretFields(in: query))
        }
        if let contentType, contentType.lowercased().hasPrefix("application/x-www-form-urlencoded"), let body = request.httpBody,
            body.count <= 64 * 1024
        {
            let text = String(decoding: body, as: UTF8.self)
            if Self.mayHoldSecret(text) { values.append(contentsOf: Self.secretFields(in: text)) }
        }
        remember(values)
    }

    /// Remembers `values` (those long enough to mask).
    func remember(_ values: [String]) {
        let kept = values.filter { $0.count >= Self.minimumLength }
        guard !kept.isEmpty else { return }
        state.withLock { state in
            for value in kept where state.members.insert(value).inserted {
                state.order.append(value)
            }
            if state.order.count > Self.capacity {
                let dropped = state.order.count - Self.capacity
                for value in state.order.prefix(dropped) { state.members.remove(value) }
                state.order.removeFirst(dropped)
            }
        }
    }

    /// `text` with every remembered value replaced by ``Redaction/placeholder``, longest first
    /// (so a token is not left half-masked by a shorter value inside it).
    func mask(_ text: String) -> String {
        let values = state.withLock { $0.order }
        guard !values.isEmpty, !text.isEmpty else { return text }
        var result = text
        for value in values.sorted(by: { $0.count > $1.count }) where result.contains(value) {
            result = result.replacingOccurrences(of: value, with: Redaction.placeholder)
        }
        return result
    }

    /// Forgets everything (tests).
    func removeAll() { state.withLock { $0 = State() } }

    /// The secret parts of one credential header's value.
    private static func credentialParts(of value: String, header: String) -> [String] {
        var parts = [value]
        if header == "cookie" {
            for pair in value.split(separator: ";") {
                if let equals = pair.firstIndex(of: "=") { parts.append(String(pair[pair.index(after: equals)...])) }
            }
            return parts
        }
        let pieces = value.split(separator: " ", maxSplits: 1)
        guard pieces.count == 2 else { return parts }
        let token = String(pieces[1]).trimmingCharacters(in: .whitespaces)
        parts.append(token)
        if pieces[0].lowercased() == "basic", let data = Data(base64Encoded: token), let pair = String(data: data, encoding: .utf8) {
            parts.append(pair)
            if let colon = pair.firstIndex(of: ":") { parts.append(String(pair[pair.index(after: colon)...])) }
        }
        return parts
    }

    /// A cheap test before parsing: does `text` mention a secret field name at all?
    private static func mayHoldSecret(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return secretNames.parameterNames.contains { lowered.contains($0) }
    }

    /// The values (as written and percent-decoded) of `name=value` pairs with secret names —
    /// also those nested in another value (`to=ftp%3A%2F%2Fx%2F%3Ftoken%3D…`), found in the
    /// decoded text.
    private static func secretFields(in text: String) -> [String] {
        var values: [String] = []
        var texts = [text]
        if let decoded = text.removingPercentEncoding, decoded != text { texts.append(decoded) }
        for pair in texts.flatMap({ $0.split(whereSeparator: { $0 == "&" || $0 == "?" }) }) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, secretNames.isSecret(field: String(parts[0])) else { continue }
            let raw = String(parts[1])
            values.append(raw)
            if let decoded = raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding, decoded != raw {
                values.append(decoded)
            }
        }
        return values
    }
}

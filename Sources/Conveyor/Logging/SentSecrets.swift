import ConveyorLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The credential values Conveyor sends, so that text it emits can hide them by value, as
/// CI systems mask registered secrets: name-based rules miss a token echoed in a response
/// body, or one inside a URL-valued query parameter (`to=ftp://x/?token=…`).
///
/// Every place that adds a credential to a request registers it: the operation (the request's
/// credential headers — default, per-request and the authenticator's — the token after an
/// auth scheme, the decoded `user:password` of Basic and its password, each cookie value,
/// query and form values with secret names, and the URL's user information), the cookie
/// stamp of both transports and the cache, and the answer to a challenge. The client's
/// configured credentials (default credential headers, ``HTTPClient/defaultCredential``, the
/// session's additional headers, ``BearerTokenAuthenticator``'s tokens) are registered while
/// configured. ``SecretMatcher`` finds them escaped as well as raw.
///
/// A value is **pinned** while something holds it — a request that carries it is in flight,
/// or a client is configured with it — and a pinned value is never forgotten. Released
/// values are kept too, most recently used first, up to ``capacity``: a response logged after
/// its request ended, an error printed later, still mask them.
final class SentSecrets: Sendable {
    // Sendable: the mutable state is `state`, behind one Lock.
    static let shared = SentSecrets()

    /// Released values remembered at most (pinned ones are not counted): the least recently
    /// used are forgotten first.
    static let capacity = 256
    /// Values shorter than this are not masked: masking "ab" everywhere would garble any text
    /// and reveal more (by its gaps) than it hides.
    static let minimumLength = 4

    private struct State {
        /// Pinned values and how many holders each has.
        var pinned: [String: Int] = [:]
        /// Released values and when each was last used (`clock`).
        var released: [String: UInt64] = [:]
        /// Released values in order of release, oldest first from `head`; an entry whose time
        /// no longer matches `released` is stale (used again since) and skipped.
        var order: [(value: String, time: UInt64)] = []
        var head = 0
        var clock: UInt64 = 0
        /// The matcher for the current set; nil after a change, built again by the next mask.
        var matcher: SecretMatcher?
    }
    private let state = Lock(State())

    /// ``HTTPHeaders/credentialNames``, lower-cased (`credentialParts` compares them so).
    private static let headerNames = HTTPHeaders.credentialNames.map { $0.lowercased() }
    private static let secretNames = Redaction()
    /// Authentication schemes (the IANA registry's, lower-cased): an `Authorization` value that
    /// is one of these names alone carries no credential.
    private static let schemeNames: Set<String> = [
        "basic", "bearer", "concealed", "digest", "dpop", "gnap", "hoba", "mutual", "negotiate", "ntlm", "oauth",
        "privatetoken", "scram-sha-1", "scram-sha-256", "token", "vapid",
    ]

    // MARK: - What a request carries

    /// The credential values `request` carries (see the type's documentation); empty, without
    /// allocating, for a request that carries none.
    /// - Parameters:
    ///   - request: The request as sent.
    ///   - fields: Its header fields (the caller has them already: it runs for every request).
    static func values(of request: URLRequest, fields: [String: String]) -> [String] {
        var values: [String] = []
        var contentType: String?
        for (name, value) in fields {
            // Compared in place: lower-casing every name allocated on every request.
            if let header = headerNames.first(where: name.equalsIgnoringASCIICase) {
                values.append(contentsOf: credentialParts(of: value, header: header))
            } else if name.equalsIgnoringASCIICase("Content-Type") {
                contentType = value
            }
        }
        if let url = request.url {
            // User information: libcurl (under both transports) sends it as Basic.
            if let password = url.password {
                let user = url.user ?? ""
                values.append(contentsOf: basicParts(user: user, password: password))
                if let plain = password.removingPercentEncoding, plain != password {
                    values.append(contentsOf: basicParts(user: user.removingPercentEncoding ?? user, password: plain))
                }
            }
            if let query = url.query, mayHoldSecret(query) { values.append(contentsOf: secretFields(in: query)) }
        }
        if let contentType, contentType.lowercased().hasPrefix("application/x-www-form-urlencoded"), let body = request.httpBody,
            body.count <= 64 * 1024
        {
            let text = String(decoding: body, as: UTF8.self)
            if mayHoldSecret(text) { values.append(contentsOf: secretFields(in: text)) }
        }
        return values.filter { $0.count >= minimumLength }
    }

    /// The values a `user`/`password` pair is sent as: `user:password`, its base64 (the Basic
    /// token a challenge answer or URL user information becomes) and the password.
    static func basicParts(user: String, password: String) -> [String] {
        let pair = "\(user):\(password)"
        return [pair, Data(pair.utf8).base64EncodedString(), password].filter { $0.count >= minimumLength }
    }

    /// The credential values among header fields (default or additional headers).
    static func values(ofHeaders fields: some Sequence<(key: String, value: String)>) -> [String] {
        var values: [String] = []
        for (name, value) in fields {
            if let header = headerNames.first(where: name.equalsIgnoringASCIICase) {
                values.append(contentsOf: credentialParts(of: value, header: header))
            }
        }
        return values.filter { $0.count >= minimumLength }
    }

    // MARK: - Pins

    /// Holds `values` until ``unpin(_:)`` with the same values: they are never forgotten
    /// meanwhile. Values shorter than ``minimumLength`` are ignored.
    func pin(_ values: [String]) {
        guard !values.isEmpty else { return }
        state.withLock { state in
            for value in values where value.count >= Self.minimumLength {
                if let count = state.pinned[value] {
                    state.pinned[value] = count + 1
                } else {
                    state.pinned[value] = 1
                    // Known already (released): the set to mask does not change.
                    if state.released.removeValue(forKey: value) == nil { state.matcher = nil }
                }
            }
        }
    }

    /// Lets go of values ``pin(_:)`` held: a value no longer held by anyone is remembered as
    /// the most recently used of the released ones.
    func unpin(_ values: [String]) {
        guard !values.isEmpty else { return }
        state.withLock { state in
            for value in values where value.count >= Self.minimumLength {
                guard let count = state.pinned[value] else { continue }
                if count > 1 {
                    state.pinned[value] = count - 1
                } else {
                    state.pinned[value] = nil
                    Self.release(value, in: &state)
                }
            }
            Self.evict(&state)
        }
    }

    /// Remembers `values` as released ones, most recently used (values nothing holds: a
    /// credential the client no longer sends, say).
    func remember(_ values: [String]) {
        let kept = values.filter { $0.count >= Self.minimumLength }
        guard !kept.isEmpty else { return }
        state.withLock { state in
            for value in kept where state.pinned[value] == nil {
                if state.released[value] == nil { state.matcher = nil }
                Self.release(value, in: &state)
            }
            Self.evict(&state)
        }
    }

    private static func release(_ value: String, in state: inout State) {
        state.clock += 1
        state.released[value] = state.clock
        state.order.append((value, state.clock))
    }

    /// Forgets the least recently used released values past ``capacity``, and compacts the
    /// order once most of it is stale (a token used by every request adds an entry each time).
    private static func evict(_ state: inout State) {
        while state.released.count > capacity, state.head < state.order.count {
            let (value, time) = state.order[state.head]
            state.head += 1
            if state.released[value] == time {
                state.released[value] = nil
                state.matcher = nil
            }
        }
        if state.order.count - state.head > 2 * state.released.count + 64 || (state.head > 64 && state.head * 2 > state.order.count) {
            state.order = state.order[state.head...].filter { state.released[$0.value] == $0.time }
            state.head = 0
        }
    }

    // MARK: - Masking

    /// `text` with every remembered value — pinned or released, raw or escaped
    /// (``SecretMatcher``) — replaced by ``Redaction/placeholder``, the longest first; cut after
    /// `maximumBytes` of output when given, after masking, so no part of a value is printed.
    func mask(_ text: String, maximumBytes: Int? = nil) -> (text: String, truncated: Bool) {
        guard !text.isEmpty else { return (text, false) }
        let matcher = state.withLock { state -> SecretMatcher in
            if let matcher = state.matcher { return matcher }
            let matcher = SecretMatcher(Array(state.pinned.keys) + Array(state.released.keys))
            state.matcher = matcher
            return matcher
        }
        return matcher.mask(text, placeholder: Redaction.placeholder, maximumBytes: maximumBytes)
    }

    /// Whether `value` is remembered (tests).
    func contains(_ value: String) -> Bool {
        state.withLock { $0.pinned[value] != nil || $0.released[value] != nil }
    }

    /// How many entries the release order holds, stale ones included (tests).
    var orderLength: Int { state.withLock { $0.order.count - $0.head } }

    /// How many holders pin `value` (tests).
    func pinCount(_ value: String) -> Int { state.withLock { $0.pinned[value] ?? 0 } }

    /// The secret parts of one credential header's value.
    private static func credentialParts(of value: String, header: String) -> [String] {
        var parts = [value]
        if header == "cookie" {
            for pair in value.split(separator: ";") {
                if let equals = pair.firstIndex(of: "=") { parts.append(String(pair[pair.index(after: equals)...])) }
            }
            return parts
        }
        let pieces = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        // A scheme's name alone (`Authorization: Bearer`) is no secret: registered, the word
        // was masked in every text (the second attack on issue 58).
        if pieces.count == 1, header.hasSuffix("authorization"), Self.schemeNames.contains(value.lowercased()) { return [] }
        guard pieces.count == 2 else { return parts }
        let token = String(pieces[1]).trimmingCharacters(in: .whitespaces)
        // A scheme with nothing after it (`setAuthorizationHeader(token: "")` sends `Bearer `)
        // hides nothing; registered, its name was masked in every text (the attack on issue 58).
        guard !token.isEmpty else { return [] }
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

import Conveyor
import Foundation
import Testing

@testable import Conveyor

/// Findings of the independent attack on masking by value (issue 58): each failed before its fix.
@Suite("Masking by value: the attack's findings")
struct MaskingAttackTests {
    /// A value nested twice — a URL carrying the secret as a query value, itself the value of
    /// another URL's query parameter — arrives with the secret's escapes escaped again
    /// (`=` → `%3D` → `%253D`). The Redaction docs promise nested URLs; 10 of 10 secrets with a
    /// character that needs escaping leaked this way.
    @Test("A secret inside a URL nested in a query parameter is masked when encoded twice")
    func doublyEncodedNestedURL() throws {
        for secret in ["YWJjZA==", "c2VjcmV0LXRva2Vu/+==", "a.b-c_d~e+f/g", "pässwört-1"] {
            let inner = "https://cdn.example/img?sig=" + secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let outer = "https://app.example/login?next=" + inner.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let masked = SecretMatcher([secret]).mask(outer, placeholder: "<r>").text
            #expect(masked.contains("<r>"), "\(secret): \(masked)")
            #expect(!masked.removingPercentEncoding!.removingPercentEncoding!.contains(secret), "\(secret): \(masked)")
        }
    }

    /// `setAuthorizationHeader(token: "")` sends `Authorization: Bearer `, whose whole value was
    /// registered: every "Bearer " in any text became `<redacted>` (a `WWW-Authenticate` line, a
    /// query value `Bearer%20of%20news`). A scheme with no credentials after it hides nothing.
    @Test("An empty bearer token or Basic credentials register nothing: the scheme's name is not a secret")
    func emptyCredentialsRegisterNothing() {
        for value in ["Bearer ", "Basic ", "Bearer    ", " "] {
            #expect(SentSecrets.values(ofHeaders: [(key: "Authorization", value: value)]).isEmpty, "\(value)")
        }
        // A real token still registers the header value and the token.
        #expect(
            Set(SentSecrets.values(ofHeaders: [(key: "Authorization", value: "Bearer abcd1234")]))
                == ["Bearer abcd1234", "abcd1234"])
    }

    @Test("A client with an empty bearer token leaves 'Bearer' in other text alone")
    func emptyTokenOnAClient() throws {
        let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:9/")!)
        client.setAuthorizationHeader(token: "")
        defer { client.clearAuthorizationHeader() }
        let text = #"WWW-Authenticate: Bearer realm="api" Bearer xyz; note=Bearer%20of%20news"#
        #expect(Redaction().masked(text) == text)
    }

    /// The second attack: a secret holding `%` itself, encoded twice (`%` → `%25` → `%2525`), was
    /// shown whole, and one ending in `%` was masked but for its last escape (`<redacted>2525`).
    @Test("A secret holding '%' is masked when encoded twice, to its last byte")
    func percentInsideTheSecret() {
        #expect(SecretMatcher(["sec%2Bret"]).mask("[sec%25252Bret]", placeholder: "<r>").text == "[<r>]")
        #expect(SecretMatcher(["p@ss:w/rd%"]).mask("x=p%2540ss%253Aw%252Frd%2525&y", placeholder: "<r>").text == "x=<r>&y")
        #expect(SecretMatcher(["sec%2Bret"]).mask("[sec%252Bret] [sec%2Bret]", placeholder: "<r>").text == "[<r>] [<r>]")
    }

    /// The second attack: `Authorization: Bearer` (a scheme's name, no space after it) still
    /// registered the word, masked wherever it stood alone.
    @Test("An Authorization value that is a scheme's name alone registers nothing")
    func bareSchemeName() {
        for value in ["Bearer", "Basic", "bearer", "Digest", "NTLM"] {
            #expect(SentSecrets.values(ofHeaders: [(key: "Authorization", value: value)]).isEmpty, "\(value)")
            #expect(SentSecrets.values(ofHeaders: [(key: "Proxy-Authorization", value: value)]).isEmpty, "\(value)")
        }
        // Another credential header's value is the secret itself, whatever it reads like.
        #expect(SentSecrets.values(ofHeaders: [(key: "X-API-Key", value: "Bearer")]) == ["Bearer"])
    }
}

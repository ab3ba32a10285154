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
}

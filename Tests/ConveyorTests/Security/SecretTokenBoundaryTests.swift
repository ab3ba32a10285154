import Conveyor
import ConveyorTesting
import Foundation
import Testing

@testable import Conveyor

/// Masking by value finds a value only where it stands as a whole token (issue 58, item 9): a
/// short token `fresh` sent as a credential turned "Credential refresh failed" into
/// "Credential re<redacted> failed". Glued to punctuation — a query, a header, JSON, an escape —
/// it is still masked; a long value is masked anywhere.
@Suite("Masking by value: whole tokens only")
struct SecretTokenBoundaryTests {
    static func masked(_ text: String, _ secrets: [String]) -> String {
        SecretMatcher(secrets).mask(text, placeholder: "<r>").text
    }

    @Test("A short value inside a word is left alone; beside punctuation, spaces, quotes or an escape it is masked")
    func wordsAreNotMangled() {
        #expect(
            Self.masked("Credential refresh failed: the refresh took longer than 30 s", ["fresh"])
                == "Credential refresh failed: the refresh took longer than 30 s")
        #expect(Self.masked("freshly fresh2 2fresh éfresh freshé", ["fresh"]) == "freshly fresh2 2fresh éfresh freshé")
        for (text, expected) in [
            ("fresh", "<r>"), ("Bearer fresh", "Bearer <r>"), ("?token=fresh&x=1", "?token=<r>&x=1"),
            (#"{"token":"fresh"}"#, #"{"token":"<r>"}"#), ("a-fresh_b", "a-<r>_b"), ("(fresh)", "(<r>)"),
            ("«fresh»", "«<r>»"), ("to=ftp%3A%2F%2Fx%2F%3Ftoken%3Dfresh%26y", "to=ftp%3A%2F%2Fx%2F%3Ftoken%3D<r>%26y"),
            ("%253Dfresh", "%253D<r>"), (#"\u003Dfresh"#, #"\u003D<r>"#), ("t=fre%73h+x", "t=<r>+x"),
        ] {
            #expect(Self.masked(text, ["fresh"]) == expected, "\(text)")
        }
        // An escaped letter beside the value is a letter: `%41` is `A`.
        #expect(Self.masked("%41fresh", ["fresh"]) == "%41fresh")
    }

    @Test("A value that begins or ends with punctuation carries its own boundary on that side; long values match anywhere")
    func punctuationAndLongValues() {
        // Base64 padding and a JWT's dots: the `=` side needs no separator, the letter side does.
        #expect(Self.masked("xYWJjZA==y", ["YWJjZA=="]) == "xYWJjZA==y")
        #expect(Self.masked("Basic YWJjZA==y", ["YWJjZA=="]) == "Basic <r>y")
        #expect(Self.masked("a.b.c", ["eyJh.eyJz.sig"]) == "a.b.c")
        #expect(Self.masked("jwt=eyJh.eyJz.sig;", ["eyJh.eyJz.sig"]) == "jwt=<r>;")
        #expect(Self.masked("[=abcd]", ["=abcd"]) == "[<r>]")
        #expect(Self.masked("x=abcd", ["=abcd"]) == "x<r>")
        // A shorter secret inside a longer word is skipped, a longer one standing alone is taken.
        #expect(Self.masked("refresh fresh", ["fresh", "refresh"]) == "<r> <r>")
        // 20 bytes or more: no word holds it by chance, so it is masked glued to letters too.
        let long = "Q7fVx2LmN9pRt4KzW8yB"
        #expect(long.utf8.count == 20)
        #expect(Self.masked("xxxx\(long)yyyy", [long]) == "xxxx<r>yyyy")
        #expect(Self.masked("xxxx\(long.dropLast())yyyy", [String(long.dropLast())]) == "xxxx\(long.dropLast())yyyy")
    }

    @Test(
        "An error description keeps the words around a short token the client sent, and masks the token itself",
        arguments: HTTPClient.TransportKind.testedKinds)
    func errorDescriptionOverSockets(transport: HTTPClient.TransportKind) async throws {
        let server = try LocalHTTPServer.started()
        defer { server.stop() }
        // Six random lowercase letters: short, and glued into words of the error text.
        let token = String((0..<6).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
        server.route("/refresh-failed") { request in
            let sent = String((request.headers["Authorization"] ?? "").dropFirst("Bearer ".count))
            return .text("Credential re\(sent) failed: the re\(sent)ing took 30 s (sent \(sent))", status: 500)
        }
        let client = testClient(server, transport)
        client.setAuthorizationHeader(token: token)
        var description = ""
        do { _ = try await client.get("refresh-failed") } catch { description = "\(error)" }
        #expect(description.contains("Credential re\(token) failed: the re\(token)ing took 30 s"), "\(description)")
        #expect(description.contains("(sent <redacted>)"), "\(description)")
    }
}

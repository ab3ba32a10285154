import Foundation
import Testing

@testable import Conveyor

/// The pieces under masking by value, without sockets: what the matcher finds, where it cuts,
/// and what the registry keeps. (The socket tests are in ``SecretMaskingTests``.)
@Suite("Secret matcher and registry: escapes, cuts, pins")
struct SecretMatcherTests {
    static func masked(_ text: String, _ secrets: [String], maximumBytes: Int? = nil) -> String {
        SecretMatcher(secrets).mask(text, placeholder: "<r>", maximumBytes: maximumBytes).text
    }

    @Test("Raw, percent-encoded in either case and in part, form, JSON and HTML escapes are found")
    func escapes() {
        let secret = "p@ss:w/rd \"x\"&y"
        for echoed in [
            secret, "p%40ss%3Aw%2Frd%20%22x%22%26y", "p%40ss%3aw%2frd+%22x%22%26y", "p@ss:w%2Frd \"x\"&y",
            #"p@ss:w\/rd \"x\"&y"#, #"p\u0040ss:w/rd \"x\"&y"#, "p@ss:w/rd &quot;x&quot;&amp;y", "p&#64;ss:w&#x2F;rd \"x\"&#38;y",
        ] {
            #expect(Self.masked("a \(echoed) b", [secret]) == "a <r> b", "\(echoed)")
        }
        // A secret that itself looks like an escape: both readings are tried.
        #expect(Self.masked("[%25x] [%x] [%2525x]", ["%25x"]) == "[<r>] [%x] [<r>]")
        #expect(Self.masked("[%25x]", ["%x12"]) == "[%25x]")
        #expect(Self.masked("[%25x12]", ["%x12"]) == "[<r>]")
        // Nothing found: the same string back; the longest of overlapping secrets wins.
        #expect(Self.masked("nothing here", ["secret"]) == "nothing here")
        #expect(Self.masked("token-abcdef", ["token", "token-abcdef"]) == "<r>")
    }

    @Test("The cut comes after masking: a secret across it is hidden whole; UTF-8 is not split")
    func cut() {
        let matcher = SecretMatcher(["SECRET-VALUE"])
        // (A space before the secret: a value this short is found only as a whole token.)
        let (text, truncated) = matcher.mask("0123456789 SECRET-VALUE tail", placeholder: "<r>", maximumBytes: 15)
        #expect(text == "0123456789 <r> " && truncated)
        let (short, cut) = matcher.mask("ééé", placeholder: "<r>", maximumBytes: 3)
        #expect(short == "é" && cut)
        #expect(matcher.mask("short", placeholder: "<r>", maximumBytes: 10) == ("short", false))
        #expect(SecretMatcher([String]()).mask("abcdef", placeholder: "<r>", maximumBytes: 3) == ("abc", true))
    }

    @Test("A pinned value outlives any number of released ones; released ones are bounded, least recently used first")
    func pins() {
        let secrets = SentSecrets()
        secrets.pin(["pinned-token"])
        secrets.pin(["pinned-token"])
        secrets.unpin(["pinned-token"])
        secrets.remember(["used-again"])
        for number in 0..<(SentSecrets.capacity * 2) {
            secrets.remember(["distinct-\(number)"])
            if number % 10 == 0 { secrets.remember(["used-again"]) }
        }
        #expect(secrets.contains("pinned-token") && secrets.pinCount("pinned-token") == 1)
        #expect(secrets.contains("used-again"))
        #expect(!secrets.contains("distinct-0"))
        #expect(secrets.contains("distinct-\(SentSecrets.capacity * 2 - 1)"))
        #expect(secrets.mask("a pinned-token b").text == "a <redacted> b")
        // Released: the most recently used of the released values, still masked.
        secrets.unpin(["pinned-token"])
        #expect(secrets.pinCount("pinned-token") == 0 && secrets.contains("pinned-token"))
        #expect(secrets.mask("x distinct-1 y").text == "x distinct-1 y")
        // A value pinned and released by every request leaves no trail behind.
        for _ in 0..<10_000 {
            secrets.pin(["every-request"])
            secrets.unpin(["every-request"])
        }
        #expect(secrets.orderLength <= 2 * SentSecrets.capacity + 64 + 1)
    }
}

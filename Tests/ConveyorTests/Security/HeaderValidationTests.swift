import Foundation
import Testing

@testable import Conveyor

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Header fields are checked before anything is sent")
struct HeaderValidationTests {
    private func firstInvalid(_ name: String, _ value: String) -> String? {
        var request = URLRequest(url: URL(string: "http://example.com/")!)
        request.allHTTPHeaderFields = ["Accept": "*/*", name: value]
        return HTTPGrammar.firstInvalidFieldName(in: request)
    }

    @Test("Every RFC 9110 token character is accepted in a name; any value without CR, LF or NUL is")
    func accepted() {
        #expect(firstInvalid("X-Token!#$%&'*+-.^_`|~09azAZ", "v") == nil)
        #expect(firstInvalid("X-Note", "café, \"quoted\"; q=0.5\t(tab)") == nil)
        #expect(firstInvalid("X-Empty", "") == nil)
    }

    @Test(
        "Names that are not tokens and values that could split the head are refused",
        arguments: [
            ("Bad Name", "v"), ("a:b", "v"), ("Naïve", "v"), ("X-Nul\u{0}", "v"), ("X(paren)", "v"), ("X/slash", "v"),
            ("X-Note", "a\r\nX-Injected: yes"), ("X-Note", "a\nb"), ("X-Note", "a\rb"), ("X-Note", "a\u{0}b"),
        ])
    func refused(name: String, value: String) {
        #expect(firstInvalid(name, value) == name)
    }
}

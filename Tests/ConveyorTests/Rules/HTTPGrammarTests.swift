import Foundation
import Testing

@testable import Conveyor

/// The one home of HTTP syntax (`HTTPGrammar`): tokens, field checks, framing and ranges.
@Suite("HTTP grammar: tokens, field checks, Content-Length, Content-Range and Range")
struct HTTPGrammarTests {
    @Test("Tokens and the field check every header that leaves passes")
    func tokensAndFields() {
        #expect(HTTPGrammar.isToken("GET") && HTTPGrammar.isToken("X-Custom_1.~!#$%&'*+^`|"))
        for text in ["", "GE T", "X:Y", "Ä", "a\"b", "(x)", "a/b", "a\u{7F}"] { #expect(!HTTPGrammar.isToken(text), "\(text)") }
        #expect(HTTPGrammar.isValidField(name: "Accept", value: "text/plain; q=0.5, */*"))
        for value in ["a\rb", "a\nb", "a\u{0}b"] { #expect(!HTTPGrammar.isValidField(name: "X", value: value)) }
        #expect(HTTPGrammar.firstInvalidFieldName(in: ["Good": "1", "Bad Name": "2"]) == "Bad Name")
        #expect(HTTPGrammar.firstInvalidFieldName(in: ["Good": "1"]) == nil)
    }

    @Test("Content-Length: one number, or the same number repeated; nothing else")
    func contentLength() {
        #expect(HTTPGrammar.contentLength("0") == 0 && HTTPGrammar.contentLength("42") == 42)
        #expect(HTTPGrammar.contentLength("42, 42") == 42 && HTTPGrammar.contentLength("42,42 ,42") == 42)
        #expect(HTTPGrammar.contentLength("9223372036854775807") == .max)
        for value in ["", "-1", "+1", "4 2", "42, 43", "42,", "0x10", "1e3", "9223372036854775808", "٤٢"] {
            #expect(HTTPGrammar.contentLength(value) == nil, "\(value)")
        }
    }

    @Test("Content-Range: one satisfied byte range, total or *")
    func contentRange() throws {
        let range = try #require(HTTPGrammar.contentRange(" bytes 10-19/100 "))
        #expect(range.first == 10 && range.last == 19 && range.total == 100)
        #expect(HTTPGrammar.contentRange("Bytes 0-0/*").map { $0.total == nil && $0.last == 0 } == true)
        for value in [
            nil, "", "bytes 5-2/100", "bytes 0-100/100", "bytes -1-5/10", "bytes 0-5", "items 0-5/10", "bytes */100", "bytes 0-5/1x",
        ] {
            #expect(HTTPGrammar.contentRange(value) == nil, "\(value ?? "nil")")
        }
    }

    @Test("Range: one byte range, clipped to the body; several or unsatisfiable ones are none")
    func byteRange() {
        #expect(HTTPGrammar.byteRange("bytes=0-99", length: 1000) == 0..<100)
        #expect(HTTPGrammar.byteRange("bytes=900-", length: 1000) == 900..<1000)
        #expect(HTTPGrammar.byteRange("bytes=-100", length: 1000) == 900..<1000)
        #expect(HTTPGrammar.byteRange("bytes=-5000", length: 1000) == 0..<1000)
        #expect(HTTPGrammar.byteRange("bytes=990-2000", length: 1000) == 990..<1000)
        for value in ["bytes=0-1,5-6", "bytes=1000-", "bytes=5-2", "bytes=-0", "items=0-1", "bytes=a-b", "bytes=+1-2"] {
            #expect(HTTPGrammar.byteRange(value, length: 1000) == nil, "\(value)")
        }
        #expect(HTTPGrammar.byteRange("bytes=0-1", length: 0) == nil)
    }
}

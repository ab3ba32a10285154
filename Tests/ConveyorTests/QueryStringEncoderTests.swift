import Conveyor
import Foundation
import Testing

@Suite("Query string encoding")
struct QueryStringEncoderTests {
    let encoder = QueryStringEncoder()

    @Test("Nested dictionaries and arrays flatten with sorted keys that keep their brackets, as AFNetworking 1.x")
    func nested() throws {
        let parameters: Parameters = ["key1": "value1", "key2": ["key": [1, "value"]]]
        #expect(try encoder.encode(parameters) == "key1=value1&key2[key][]=1&key2[key][]=value")
    }

    @Test("Values escape every RFC 3986 reserved character, / and ? included; percentEscaped escapes one string alike")
    func reservedCharacters() throws {
        let reserved = " :#[]@!$&'()*+,;=/?"
        let escaped = "%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%2F%3F"
        #expect(try encoder.encode(["k": reserved]) == "k=" + escaped)
        #expect(QueryStringEncoder.percentEscaped(reserved) == escaped)
        #expect(QueryStringEncoder.percentEscaped("a b~-._", spaceEncoding: .plus) == "a+b~-._")
        #expect(QueryStringEncoder.percentEscaped("ä") == "%C3%A4")
    }

    @Test("Non-ASCII text is UTF-8 percent-encoded and emoji are never split")
    func unicode() throws {
        #expect(try encoder.encode(["a": "ä"]) == "a=%C3%A4")
        let long = String(repeating: "a", count: 49) + "👴🏿👷🏻‍♀️"
        let encoded = try encoder.encode(["e": long])
        #expect(encoded.removingPercentEncoding == "e=" + long)
    }

    @Test("nil and NSNull become bare keys; booleans are 1/0 or literal")
    func nullsAndBooleans() throws {
        let none: String? = nil
        #expect(try encoder.encode(["a": none as Any, "b": NSNull(), "c": true, "d": false]) == "a&b&c=1&d=0")
        let literal = QueryStringEncoder(boolEncoding: .literal)
        #expect(try literal.encode(["c": true]) == "c=true")
    }

    @Test("Array styles: brackets, indexed, repeated; sets repeat the bare key")
    func arrayStyles() throws {
        #expect(try QueryStringEncoder(arrayEncoding: .indexed).encode(["a": ["x", "y"]]) == "a[0]=x&a[1]=y")
        #expect(try QueryStringEncoder(arrayEncoding: .repeated).encode(["a": ["x", "y"]]) == "a=x&a=y")
        #expect(try encoder.encode(["s": Set(["b", "a"])]) == "s=a&s=b")
    }

    @Test("Spaces can be sent as +")
    func plusSpaces() throws {
        #expect(try QueryStringEncoder(spaceEncoding: .plus).encode(["q": "a b"]) == "q=a+b")
    }

    @Test("A value with no textual form is a parameterEncodingFailed error naming the key")
    func unsupportedValue() {
        #expect {
            try encoder.encode(["bad": Double.nan])
        } throws: { error in
            guard case .parameterEncodingFailed(.unsupportedValue(let key, _)) = error as? ConveyorError else { return false }
            return key == "bad"
        }
    }
}

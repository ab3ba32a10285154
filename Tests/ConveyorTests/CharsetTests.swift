import Conveyor
import ConveyorTesting
import Foundation
import Testing

@Suite("String responses decode by the charset the server names")
struct CharsetTests {
    /// Bytes produced by GNU iconv for each text.
    static let vectors: [(charset: String, text: String, hex: String)] = [
        ("EUC-JP", "日本語", "c6fccbdcb8ec"), ("Shift_JIS", "日本語", "93fa967b8cea"),
        ("ISO-2022-JP", "日本語", "1b2442467c4b5c386c1b2842"), ("GB18030", "中文", "d6d0cec4"), ("GBK", "中文", "d6d0cec4"),
        ("Big5", "中文", "a4a4a4e5"), ("EUC-KR", "한국어", "c7d1b1b9beee"), ("KOI8-R", "мир", "cdc9d2"),
        ("windows-1251", "мир", "ece8f0"), ("ISO-8859-5", "мир", "dcd8e0"), ("ISO-8859-15", "€uro", "a475726f"),
        ("windows-1252", "€uro", "8075726f"), ("ISO-8859-2", "łódź", "b3f364bc"), ("windows-1250", "łódź", "b3f3649f"),
        ("windows-1253", "Ωμέγα", "d9ecdde3e1"), ("ISO-8859-7", "Ωμέγα", "d9ecdde3e1"), ("windows-1254", "şeker", "fe656b6572"),
        ("ISO-8859-9", "şeker", "fe656b6572"), ("windows-1255", "שלום", "f9ece5ed"), ("ISO-8859-8", "שלום", "f9ece5ed"),
        ("windows-1256", "سلام", "d3e1c7e3"), ("ISO-8859-6", "سلام", "d3e4c7e5"), ("windows-1257", "ąžuolas", "e0fe756f6c6173"),
        ("ISO-8859-13", "ąžuolas", "e0fe756f6c6173"), ("windows-1258", "Việt", "5669eaf274"), ("ISO-8859-1", "café", "636166e9"),
        ("ISO-8859-3", "ĝis", "f86973"), ("ISO-8859-4", "ķēde", "f3ba6465"), ("ISO-8859-10", "ŋ", "bf"),
        ("ISO-8859-14", "ẁ", "b8"), ("ISO-8859-16", "ș", "ba"), ("UTF-8", "日本語", "e697a5e69cace8aa9e"),
        ("utf-16le", "hé", "68 00 e9 00"),
    ]

    static func bytes(_ hex: String) -> Data {
        let digits = Array(hex.replacingOccurrences(of: " ", with: ""))
        return Data(stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! })
    }

    @Test("Every charset decodes from real encoded bodies served over a socket")
    func everyCharset() async throws {
        try await withServer { server, client in
            for (index, vector) in Self.vectors.enumerated() {
                server.route("/text/\(index)") { _ in
                    .init(headers: ["Content-Type": "text/plain; charset=\(vector.charset)"], body: .data(Self.bytes(vector.hex)))
                }
            }
            for (index, vector) in Self.vectors.enumerated() {
                let response = try await client.response(
                    for: try client.request(method: .get, path: "text/\(index)"), responseSerializer: .string)
                #expect(response.value == vector.text, "\(vector.charset)")
            }
        }
    }

    @Test("IANA aliases and browsers' x- names of a charset decode like its main name", arguments: HTTPClient.TransportKind.testedKinds)
    func aliases(transport: HTTPClient.TransportKind) async throws {
        let vectors: [(names: [String], text: String, hex: String)] = [
            (["x-sjis", "MS_Kanji", "csShiftJIS", "windows-31j", "SJIS", "x-ms-cp932", "Shift_JIS"], "日本語", "93fa967b8cea"),
            (["x-euc-jp", "csEUCPkdFmtJapanese", "Extended_UNIX_Code_Packed_Format_for_Japanese"], "日本語", "c6fccbdcb8ec"),
            (["csUTF8", "unicode-1-1-utf-8", "x-unicode20utf8"], "日本語", "e697a5e69cace8aa9e"),
            (["csBig5", "x-x-big5"], "中文", "a4a4a4e5"), (["ks_c_5601-1987", "csEUCKR"], "한국어", "c7d1b1b9beee"),
            (["x-gbk", "csGB2312"], "中文", "d6d0cec4"), (["x-mac-roman", "csMacintosh"], "café", "636166 8e"),
            (["x-cp1252", "l1", "csISOLatin1"], "café", "636166e9"),
        ]
        var configuration = HTTPClient.Configuration.default
        configuration.transport = transport
        try await withServer(configuration: configuration) { server, client in
            let cases = vectors.flatMap { vector in vector.names.map { (name: $0, text: vector.text, hex: vector.hex) } }
            for (index, vector) in cases.enumerated() {
                server.route("/alias/\(index)") { _ in
                    .init(headers: ["Content-Type": "text/plain; charset=\(vector.name)"], body: .data(Self.bytes(vector.hex)))
                }
            }
            for (index, vector) in cases.enumerated() {
                let response = try await client.response(
                    for: try client.request(method: .get, path: "alias/\(index)"), responseSerializer: .string)
                #expect(response.value == vector.text, "\(vector.name)")
            }
        }
    }

    @Test("operation.responseString uses the charset too")
    func responseString() async throws {
        try await withServer { server, client in
            server.route("/euc") { _ in
                .init(headers: ["Content-Type": "text/plain; charset=\"EUC-JP\""], body: .data(Self.bytes("c6fccbdcb8ec")))
            }
            let probe = CompletionProbe()
            let operation = client.get("euc", success: probe.success, failure: probe.failure)
            _ = await probe.outcome()
            #expect(operation.responseString == "日本語")
        }
    }

    @Test("No charset: BOM, then UTF-8, then ISO-8859-1")
    func noCharset() throws {
        #expect(try CharsetDecoder.decode(Data([0xEF, 0xBB, 0xBF]) + Data("ok".utf8), charset: nil) == "ok")
        #expect(try CharsetDecoder.decode(Data([0xFF, 0xFE, 0x68, 0x00]), charset: nil) == "h")
        #expect(try CharsetDecoder.decode(Data("日本".utf8), charset: nil) == "日本")
        #expect(try CharsetDecoder.decode(Data([0x63, 0x61, 0x66, 0xE9]), charset: nil) == "café")
    }

    @Test("An unknown charset and a lying charset are clear errors, not garbage")
    func badCharsets() async throws {
        #expect {
            try CharsetDecoder.decode(Data("x".utf8), charset: "x-no-such-charset")
        } throws: { error in
            if case .unknownCharset("x-no-such-charset") = error as? ResponseSerializationError { true } else { false }
        }
        #expect {
            try CharsetDecoder.decode(Data([0xC3, 0x28]), charset: "utf-8")
        } throws: { error in
            if case .invalidText = error as? ResponseSerializationError { true } else { false }
        }
        #expect {
            try CharsetDecoder.decode(Data([0x80, 0x80, 0xFF]), charset: "EUC-JP")
        } throws: { error in
            if case .invalidText = error as? ResponseSerializationError { true } else { false }
        }
        try await withServer { server, client in
            server.route("/lying") { _ in
                .init(headers: ["Content-Type": "text/plain; charset=utf-8"], body: .data(Data([0xFF, 0xFE, 0xFD])))
            }
            await #expect {
                try await client.response(for: try client.request(method: .get, path: "lying"), responseSerializer: .string)
            } throws: { error in
                guard case .responseSerializationFailed(let underlying, _, let data) = error as? ConveyorError else { return false }
                return underlying is ResponseSerializationError && data == Data([0xFF, 0xFE, 0xFD])
            }
        }
    }
}

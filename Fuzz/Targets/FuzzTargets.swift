import Foundation

/// Each target must never crash, hang or fail its property; a failed property calls
/// `fatalError`, which libFuzzer reports with the input that caused it.
enum FuzzTargets {
    /// Splits input into strings at 0x00 bytes (decoded lossily as UTF-8).
    static func strings(_ data: Data) -> [String] {
        data.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Form encoding round-trips through LocalHTTPServer's decoder: keys and values survive.
    static func queryStringRoundTrip(_ data: Data) {
        let parts = strings(data)
        var parameters: [String: String] = [:]
        var index = 0
        while index + 1 < parts.count {
            if !parts[index].isEmpty { parameters[parts[index]] = parts[index + 1] }
            index += 2
        }
        guard let encoded = try? QueryStringEncoder().encode(parameters) else { fatalError("strings must always encode") }
        let decoded = LocalHTTPServer.Request.decodeForm(encoded)
        let expected = parameters.sorted { $0.key < $1.key }
        guard decoded.count == expected.count,
            zip(decoded, expected).allSatisfy({ $0.name == $1.key && $0.value == $1.value })
        else {
            fatalError("round trip lost data: \(expected) → \(encoded) → \(decoded)")
        }
    }

    /// A multipart body written by MultipartFormData parses back into the same parts.
    static func multipartRoundTrip(_ data: Data) {
        let parts = strings(data)
        let form = MultipartFormData()
        var expected: [(name: String, body: Data)] = []
        var index = 0
        while index + 1 < parts.count {
            let name = parts[index]
            let body = Data(parts[index + 1].utf8)
            if index % 4 == 0 {
                form.append(data: body, name: name, fileName: name + ".bin", mimeType: "application/octet-stream")
            } else {
                form.append(parts[index + 1], name: name)
            }
            expected.append((name, body))
            index += 2
        }
        // A form without parts has no body to parse (RFC 2046 requires at least one part).
        guard !expected.isEmpty else { return }
        guard let body = try? form.encode() else { fatalError("in-memory parts must encode") }
        guard Int64(body.count) == form.contentLength else { fatalError("contentLength \(form.contentLength) != \(body.count)") }
        let parsed: [MultipartParser.Part]
        do {
            parsed = try MultipartParser.parse(body, boundary: form.boundary)
        } catch {
            fatalError("the parser refused the writer's body: \(error)\n\(String(decoding: body, as: UTF8.self))")
        }
        guard parsed.count == expected.count, zip(parsed, expected).allSatisfy({ $0.body == $1.body }) else {
            fatalError("parts differ after a round trip")
        }
    }

    /// Any bytes with any charset name decode or throw; never crash.
    static func charsetDecoding(_ data: Data) {
        let charsets = [
            "utf-8", "iso-8859-1", "windows-1252", "utf-16", "utf-16le", "utf-16be", "shift_jis", "euc-jp",
            "gb2312", "koi8-r", "us-ascii", "x-unknown", "",
        ]
        let charset = data.first.map { charsets[Int($0) % charsets.count] }
        _ = try? CharsetDecoder.decode(data.dropFirst(), charset: charset)
    }

    /// Stored cache entries: arbitrary bytes are refused cleanly; a valid entry made from the
    /// input survives encoding and decoding unchanged.
    static func cacheEntryDecoding(_ data: Data) {
        _ = try? CachedResponse.decode(data)
        let texts = strings(data)
        var headers = HTTPHeaders()
        for (offset, text) in texts.prefix(6).enumerated() where !text.isEmpty { headers["X-F\(offset)"] = text }
        let entry = CachedResponse(url: URL(string: "http://127.0.0.1/fuzz")!, statusCode: 200, headers: headers, data: data)
        guard let bytes = try? entry.encoded() else { fatalError("an entry must encode") }
        guard let (key, decoded) = try? CachedResponse.decode(bytes), key == entry.key, decoded == entry else {
            fatalError("a cache entry changed in a round trip")
        }
        // Truncations of a valid entry are refused, never served.
        if bytes.count > 1, (try? CachedResponse.decode(bytes.prefix(bytes.count - 1))) != nil {
            fatalError("a truncated entry decoded")
        }
    }

    /// Image sniffing reads only what is there.
    static func imageHeaderSniffing(_ data: Data) {
        _ = ImageHeader.read(data)
        _ = try? EncodedImage(data: data)
    }

    /// LocalHTTPServer's request parser, fed through a socket pair: requests parse or the
    /// connection ends with an error; never a crash or a hang.
    static func serverRequestParsing(_ data: Data) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { fatalError("socketpair failed") }
        defer { close(fds[0]) }
        _ = data.withUnsafeBytes { send(fds[1], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fds[1], Int32(SHUT_WR))
        let connection = ServerConnection(fd: fds[0])
        for _ in 0..<64 {
            guard (try? connection.readRequest(storeLimit: 1 << 20, sendContinue: {})) != nil else { break }
        }
        close(fds[1])
    }
}

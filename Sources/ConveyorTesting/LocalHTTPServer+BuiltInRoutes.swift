import Conveyor
import Foundation

extension LocalHTTPServer {
    /// The httpbin-like routes every server has:
    ///
    /// | route | answer |
    /// |---|---|
    /// | `/get`, `/post`, `/put`, `/patch`, `/delete`, `/anything/…` | JSON echo: `method`, `args`, `headers`, `data`, `form`, `json`, `url` |
    /// | `/headers` | `{"headers": …}` |
    /// | `/raw-headers` | `{"rawHeaders": [name, value, name, value, …]}`, as Node's `req.rawHeaders` (values not keyed by their names: what masking by value is for) |
    /// | `/status/{n}` | status n, empty body (3xx: `Location: /get`) |
    /// | `/delay/{s}` | the echo after s seconds (at most 30) |
    /// | `/bytes/{n}` | n pseudo-random bytes (`?seed=` for others) |
    /// | `/redirect/{n}` | 302 chain of n hops ending at `/get` |
    /// | `/redirect-to?url=&status_code=` | a redirect to `url` |
    /// | `/basic-auth/{user}/{password}` | 200 with the right Basic credentials, else 401 + `WWW-Authenticate` |
    /// | `/hidden-basic-auth/{user}/{password}` | as above, but 404 instead of 401 |
    /// | `/bearer` | 200 with any `Bearer` token, else 401 |
    /// | `/response-headers?Name=value` | those headers, and a JSON echo of them |
    /// | `/cache` | 304 when the request is conditional, else the echo with `ETag` and `Last-Modified` |
    /// | `/cache/{n}` | the echo with `Cache-Control: public, max-age=n` |
    /// | `/etag/{etag}` | 304 when `If-None-Match` names the tag, else the echo with that `ETag` |
    /// | `/json`, `/html`, `/xml`, `/text` | fixed documents |
    /// | `/image/{format}` | a 3 x 2 sample image (``SampleImages``) |
    /// | `/encoding/utf8` | multilingual UTF-8 text |
    /// | `/drip?numbytes=&duration=` | bytes spread over `duration` seconds |
    /// | `/range/{n}?duration=&chunk_size=` | n bytes (at most 102,400) of `abc…z` with `Range` support, streamed over `duration` seconds |
    /// | `/fault/{name}` | the ``Fault`` of that name |
    func builtInResponse(to request: Request) -> Response {
        let components = request.path.split(separator: "/").map(String.init)
        guard let first = components.first else { return .text("ConveyorTesting LocalHTTPServer\n") }
        let argument = components.count > 1 ? components[1] : nil
        switch first {
        case "get", "post", "put", "patch", "delete", "anything":
            let method = request.method == "HEAD" ? "get" : request.method.lowercased()
            if first != "anything", method != first {
                return Response(status: 405, headers: ["Allow": first.uppercased()])
            }
            return .json(Self.echo(request))
        case "headers":
            return .json(["headers": Self.headerObject(request.headers)])
        case "raw-headers":
            return .json(["rawHeaders": request.headers.flatMap { [$0.name, $0.value] }])
        case "status":
            guard let code = argument.flatMap(Int.init), (100..<600).contains(code) else { return .text("bad status\n", status: 400) }
            var response = Response(status: code)
            if (300..<400).contains(code), code != 304 { response.headers["Location"] = "/get" }
            if code == 401 { response.headers["WWW-Authenticate"] = "Basic realm=\"Fake Realm\"" }
            return response
        case "delay":
            let seconds = min(argument.flatMap(Double.init) ?? 1, 30)
            guard wait(seconds) else { return Response(status: 503) }
            return .json(Self.echo(request))
        case "bytes":
            let count = min(argument.flatMap(Int.init) ?? 0, 100 << 20)
            var generator = SeededGenerator(seed: request.queryValue("seed").flatMap(UInt64.init) ?? 42)
            // Eight bytes per draw: generating megabytes one byte at a time is slow in debug builds.
            var bytes = Data(count: count)
            bytes.withUnsafeMutableBytes { buffer in
                var offset = 0
                while offset < count {
                    var word = generator.next()
                    let take = min(8, count - offset)
                    withUnsafeBytes(of: &word) {
                        buffer.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: take)
                    }
                    offset += take
                }
            }
            return Response(headers: ["Content-Type": "application/octet-stream"], body: .data(bytes))
        case "redirect":
            let hops = argument.flatMap(Int.init) ?? 1
            return Response(status: 302, headers: ["Location": hops <= 1 ? "/get" : "/redirect/\(hops - 1)"])
        case "redirect-to":
            let status = request.queryValue("status_code").flatMap(Int.init) ?? 302
            return Response(status: status, headers: ["Location": request.queryValue("url") ?? "/get"])
        case "basic-auth", "hidden-basic-auth":
            guard components.count == 3 else { return .text("usage: /basic-auth/{user}/{password}\n", status: 400) }
            let expected = "Basic " + Data("\(components[1]):\(components[2])".utf8).base64EncodedString()
            if request.headers["Authorization"] == expected {
                return .json(["authenticated": true, "user": components[1]])
            }
            if first == "hidden-basic-auth" { return Response(status: 404) }
            return Response(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"Fake Realm\""])
        case "bearer":
            guard let value = request.headers["Authorization"], value.hasPrefix("Bearer ") else {
                return Response(status: 401, headers: ["WWW-Authenticate": "Bearer"])
            }
            return .json(["authenticated": true, "token": String(value.dropFirst(7))])
        case "response-headers":
            var response = Response.json(Dictionary(request.queryItems.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 }))
            for (name, value) in request.queryItems { response.headers[name] = value }
            return response
        case "cache" where argument == nil:
            if request.headers["If-None-Match"] != nil || request.headers["If-Modified-Since"] != nil { return Response(status: 304) }
            var response = Response.json(Self.echo(request))
            response.headers["ETag"] = "\"\(UUID().uuidString)\""
            response.headers["Last-Modified"] = Self.httpDate(Date())
            return response
        case "cache":
            guard let seconds = argument.flatMap(Int.init), seconds >= 0 else { return .text("usage: /cache/{seconds}\n", status: 400) }
            var response = Response.json(Self.echo(request))
            response.headers["Cache-Control"] = "public, max-age=\(seconds)"
            return response
        case "etag":
            guard let tag = argument else { return .text("usage: /etag/{etag}\n", status: 400) }
            let quoted = "\"\(tag)\""
            let sent = (request.headers["If-None-Match"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if sent.contains(quoted) || sent.contains("*") { return Response(status: 304, headers: ["ETag": quoted]) }
            var response = Response.json(Self.echo(request))
            response.headers["ETag"] = quoted
            return response
        case "image":
            guard let sample = argument.flatMap(SampleImages.named) else {
                return .text("formats: png jpeg gif webp webp-lossy bmp tiff ico\n", status: 404)
            }
            return Response(headers: ["Content-Type": sample.mimeType], body: .data(sample.data))
        case "encoding":
            return .text("UTF-8 encoded sample: ∮ E⋅da = Q, 日本語, Ελληνικά, русский, 🎉\n", contentType: "text/html; charset=utf-8")
        case "json":
            return .json(["slideshow": ["author": "Conveyor", "title": "Sample", "slides": [["title": "One"], ["title": "Two"]]]])
        case "html":
            return .text("<!DOCTYPE html>\n<html><body><h1>Conveyor</h1></body></html>\n", contentType: "text/html; charset=utf-8")
        case "xml":
            return .text(
                "<?xml version=\"1.0\"?>\n<slideshow title=\"Sample\"><slide>One</slide></slideshow>\n", contentType: "application/xml")
        case "text":
            return .text("Hello from LocalHTTPServer\n")
        case "drip":
            let count = request.queryValue("numbytes").flatMap(Int.init) ?? 10
            let duration = request.queryValue("duration").flatMap(Double.init) ?? 1
            return Response(
                headers: ["Content-Type": "application/octet-stream", "Content-Length": String(count)],
                body: .stream(chunked: false) { writer in
                    for _ in 0..<count {
                        guard writer.pause(duration / Double(max(count, 1))) else { return }
                        try writer.write(Data("*".utf8))
                    }
                })
        case "range":
            guard let count = argument.flatMap(Int.init), (1...102_400).contains(count) else {
                return .text("number of bytes must be in the range (0, 102400]\n", status: 404)
            }
            let data = Data((0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) })
            var response = Response.ranged(data, etag: "\"range\(count)\"", for: request)
            let duration = request.queryValue("duration").flatMap(Double.init) ?? 0
            guard duration > 0, case .data(let body) = response.body, !body.isEmpty else { return response }
            let chunkSize = max(1, request.queryValue("chunk_size").flatMap(Int.init) ?? 10 * 1024)
            let chunks = (body.count + chunkSize - 1) / chunkSize
            response.headers["Content-Length"] = String(body.count)
            response.body = .stream(chunked: false) { writer in
                for index in 0..<chunks {
                    guard writer.pause(duration / Double(chunks)) else { return }
                    try writer.write(body.subdata(in: (index * chunkSize)..<min(body.count, (index + 1) * chunkSize)))
                }
            }
            return response
        case "fault":
            guard let fault = argument.flatMap(Fault.init(rawValue:)) else {
                return .text("faults: \(Fault.allCases.map(\.rawValue).joined(separator: ", "))\n", status: 404)
            }
            return Response(body: .fault(fault))
        default:
            return .text("Not Found\n", status: 404)
        }
    }

    static func echo(_ request: Request) -> [String: Any] {
        var args: [String: Any] = [:]
        for (name, value) in request.queryItems { args[name] = merge(args[name], value) }
        var form: [String: Any] = [:]
        let contentType = request.headers["Content-Type"]?.lowercased() ?? ""
        if contentType.hasPrefix("application/x-www-form-urlencoded") {
            for (name, value) in Request.decodeForm(request.bodyText) { form[name] = merge(form[name], value) }
        }
        var files: [String: Any] = [:]
        var multipart = false
        if contentType.hasPrefix("multipart/"), let parts = try? request.multipartParts() {
            multipart = true
            for part in parts {
                let name = part.name ?? ""
                if part.fileName != nil {
                    files[name] = merge(files[name], echoText(part.body))
                } else {
                    form[name] = merge(form[name], String(decoding: part.body, as: UTF8.self))
                }
            }
        }
        let json =
            contentType.contains("json") ? (try? JSONSerialization.jsonObject(with: request.body, options: [.fragmentsAllowed])) : nil
        return [
            "method": request.method,
            "args": args,
            "form": form,
            "files": files,
            "data": form.isEmpty && !multipart ? echoText(request.body, length: request.bodyLength) : "",
            "json": json ?? NSNull(),
            "headers": headerObject(request.headers),
            "origin": "127.0.0.1",
            "url": "http://\(request.headers["Host"] ?? "127.0.0.1")\(request.target)",
        ]
    }

    /// Bodies are echoed as text up to 1 MB; larger or binary ones as a summary, because
    /// escaping megabytes into JSON would cost more than the request under test.
    private static func echoText(_ body: Data, length: Int? = nil) -> String {
        let length = length ?? body.count
        if length <= 1 << 20, body.count == length, let text = String(data: body, encoding: .utf8) { return text }
        return "<\(length) bytes>"
    }

    /// httpbin's convention: a repeated field becomes an array.
    private static func merge(_ existing: Any?, _ value: String) -> Any {
        switch existing {
        case nil: return value
        case let array as [String]: return array + [value]
        case let single as String: return [single, value]
        default: return value
        }
    }

    private static func headerObject(_ headers: HTTPHeaders) -> [String: String] {
        // Title-case names, as httpbin shows them.
        Dictionary(
            headers.map { field in
                (
                    field.name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }.joined(separator: "-"),
                    field.value
                )
            }, uniquingKeysWith: { first, second in "\(first), \(second)" })
    }
}

/// A small deterministic generator (SplitMix64), so `/bytes/{n}` answers the same bytes each time.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPRequestOperation {
    /// A `curl` command line that sends the operation's current request again, with secrets
    /// redacted by the default ``Redaction``.
    public var cURLDescription: String { cURLDescription(redaction: Redaction()) }

    /// A `curl` command line that sends the operation's current request again.
    /// - Parameter redaction: What to hide; `Redaction.none` prints secrets.
    /// - Returns: The command, single-quoted for POSIX shells.
    public func cURLDescription(redaction: Redaction) -> String {
        CURLCommand.describe(currentRequest, redaction: redaction)
    }
}

/// Builds `curl` command lines.
enum CURLCommand {
    static func describe(_ request: URLRequest, redaction: Redaction) -> String {
        var parts = ["curl", "-X", request.httpMethod ?? "GET"]
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            parts += ["-H", quote("\(name): \(redaction.header(value, named: name))")]
        }
        if let body = request.httpBody, !body.isEmpty {
            if let text = String(data: body, encoding: .utf8) {
                parts += ["--data-binary", quote(redaction.body(text, contentType: request.value(forHTTPHeaderField: "Content-Type")))]
            } else {
                parts.append("# <\(body.count) bytes of binary body not shown>")
            }
        } else if request.httpBodyStream != nil {
            parts.append("# <streamed body not shown>")
        }
        // curl knows no http+unix URLs: the socket is its own option, the URL an http one.
        if let url = request.url, let split = try? UnixSocketURL.split(url) {
            parts += ["--unix-socket", quote(split.socketPath), quote(redaction.url(split.url))]
        } else {
            parts.append(quote(redaction.url(request.url)))
        }
        return redaction.masked(parts.joined(separator: " "))
    }

    /// Single-quotes for POSIX shells; `'` becomes `'\''`.
    static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension NetworkLogger {
    func describe(_ request: URLRequest, _ settings: State) -> String {
        "\(request.httpMethod ?? "GET") \(settings.redaction.url(request.url))"
    }

    /// The error's description with every raw URL replaced by its redacted form.
    func redacted(_ error: ConveyorError, _ settings: State) -> String {
        var text = error.description
        for url in [error.response?.url].compactMap({ $0 }) {
            text = text.replacingOccurrences(of: url.absoluteString, with: settings.redaction.url(url))
        }
        return text
    }

    func details(of request: URLRequest, _ settings: State) -> String {
        var lines: [String] = []
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            lines.append("  \(name): \(settings.redaction.header(value, named: name))")
        }
        if let body = request.httpBody, !body.isEmpty {
            lines.append(
                "  body: " + bodyText(body, contentType: request.value(forHTTPHeaderField: "Content-Type"), charset: nil, settings))
        } else if request.httpBodyStream != nil {
            lines.append("  body: <streamed>")
        }
        lines.append("  " + CURLCommand.describe(request, redaction: settings.redaction))
        return "\n" + lines.joined(separator: "\n")
    }

    func details(of response: HTTPResponseHead, operation: HTTPRequestOperation, _ settings: State) -> String {
        var lines: [String] = []
        for (name, value) in response.headers.sorted(by: { $0.name.lowercased() < $1.name.lowercased() }) {
            lines.append("  \(name): \(settings.redaction.header(value, named: name))")
        }
        if let body = operation.responseData, !body.isEmpty {
            lines.append("  body: " + bodyText(body, contentType: response.mimeType, charset: response.textEncodingName, settings))
        } else if let file = (operation as? FileDownloadOperation)?.destinationURL {
            lines.append("  body: <saved to \(file.path)>")
        }
        return "\n" + lines.joined(separator: "\n")
    }

    /// Text bodies decoded with their charset, redacted and truncated; others summarised as
    /// `<2.1 MB image/png>`.
    func bodyText(_ body: Data, contentType: String?, charset: String?, _ settings: State) -> String {
        let type = contentType?.lowercased() ?? ""
        let textual =
            type.hasPrefix("text/") || type.contains("json") || type.contains("xml")
            || type.hasPrefix("application/x-www-form-urlencoded") || type.contains("javascript") || type.isEmpty
        guard textual, let text = try? CharsetDecoder.decode(body, charset: charset), !text.contains("\u{0}") else {
            return "<\(Self.size(Int64(body.count))) \(type.isEmpty ? "binary" : type)>"
        }
        let redacted = settings.redaction.body(text, contentType: type)
        // Masked before the cut: a value across the limit is hidden whole, not printed in part.
        let (shown, truncated) = settings.redaction.masked(redacted, maximumBytes: settings.bodyLimit)
        guard truncated else { return shown }
        return shown + "… (\(Self.size(Int64(body.count))) in all, truncated)"
    }

    static func seconds(_ interval: TimeInterval) -> String { String(format: "%.3f s", interval) }

    /// Decimal units, one decimal: `950 B`, `1.2 kB`, `3.4 MB`, `1.0 GB`.
    static func size(_ bytes: Int64) -> String {
        switch bytes {
        case ..<1000: return "\(bytes) B"
        case ..<1_000_000: return String(format: "%.1f kB", Double(bytes) / 1e3)
        case ..<1_000_000_000: return String(format: "%.1f MB", Double(bytes) / 1e6)
        default: return String(format: "%.1f GB", Double(bytes) / 1e9)
        }
    }
}

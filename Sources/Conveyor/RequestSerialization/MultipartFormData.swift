import Foundation

/// Builds a `multipart/form-data` body (RFC 7578) part by part, AFNetworking-style.
///
/// Parts are recorded, not read: files and streams are only read when the body is encoded,
/// into memory below ``HTTPClient/Configuration/multipartMemoryThreshold`` or through a small
/// buffer into a temporary file above it, so a 1 GB upload never holds 1 GB in memory.
///
/// ```swift
/// let request = try client.multipartRequest(path: "upload", parameters: ["album": "2026"]) { form in
///     try form.append(fileURL: photoURL, name: "photo")
///     form.append("A caption", name: "caption")
/// }
/// ```
public final class MultipartFormData {
    /// The boundary between parts; random unless given.
    public let boundary: String

    enum Body {
        case data(Data)
        case file(URL)
        case stream(InputStream)
    }

    struct Part {
        let headers: HTTPHeaders
        let body: Body
        let length: Int64
        let name: String
    }

    private(set) var parts: [Part] = []
    /// Set by ``throttleBandwidth(packetSize:delay:)``.
    private(set) var throttle: (packetSize: Int, delay: TimeInterval)?

    /// Creates an empty body.
    /// - Parameter boundary: The boundary; default a random one that cannot occur in the parts' headers.
    public init(boundary: String = MultipartFormData.randomBoundary()) {
        self.boundary = boundary
    }

    /// A random boundary: `conveyor.boundary.` and 32 hex digits.
    public static func randomBoundary() -> String {
        "conveyor.boundary." + (0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max)) }.joined()
    }

    /// The `Content-Type` header value: `multipart/form-data; boundary=…`.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The exact length in bytes of the encoded body.
    public var contentLength: Int64 {
        guard !parts.isEmpty else { return 0 }
        let partsLength = parts.reduce(Int64(0)) { $0 + Int64(headerData(for: $1).count) + $1.length + 2 }
        return partsLength + Int64(closingBoundary.count)
    }

    // MARK: - Appending

    /// Appends a file; its name and MIME type come from the file's name.
    /// - Parameters:
    ///   - fileURL: A `file:` URL of a readable regular file.
    ///   - name: The form field name.
    /// - Throws: ``ConveyorError/multipartEncodingFailed(reason:)`` naming the file when it is
    ///   not a file URL, missing, a directory or unreadable.
    public func append(fileURL: URL, name: String) throws {
        try append(fileURL: fileURL, name: name, fileName: fileURL.lastPathComponent, mimeType: MIMEType.forPath(fileURL.lastPathComponent))
    }

    /// Appends a file with an explicit file name and MIME type.
    /// - Parameters:
    ///   - fileURL: A `file:` URL of a readable regular file.
    ///   - name: The form field name.
    ///   - fileName: The `filename` sent to the server.
    ///   - mimeType: The part's `Content-Type`.
    /// - Throws: ``ConveyorError/multipartEncodingFailed(reason:)`` naming the file.
    public func append(fileURL: URL, name: String, fileName: String, mimeType: String) throws {
        let length = try Self.checkedLength(of: fileURL)
        parts.append(
            Part(
                headers: Self.headers(name: name, fileName: fileName, mimeType: mimeType), body: .file(fileURL), length: length, name: name)
        )
    }

    /// Appends bytes, as a file part when `fileName` is given.
    /// - Parameters:
    ///   - data: The bytes.
    ///   - name: The form field name.
    ///   - fileName: The `filename`; nil for a plain field.
    ///   - mimeType: The part's `Content-Type`; nil for none (text/plain to the server).
    public func append(data: Data, name: String, fileName: String? = nil, mimeType: String? = nil) {
        parts.append(
            Part(
                headers: Self.headers(name: name, fileName: fileName, mimeType: mimeType), body: .data(data), length: Int64(data.count),
                name: name))
    }

    /// Appends a text field, UTF-8 encoded.
    /// - Parameters:
    ///   - value: The text.
    ///   - name: The form field name.
    public func append(_ value: String, name: String) {
        append(data: Data(value.utf8), name: name)
    }

    /// Appends a part read from a stream when the body is encoded.
    /// - Parameters:
    ///   - stream: An unopened stream that yields exactly `length` bytes.
    ///   - length: The number of bytes; encoding fails if the stream yields fewer.
    ///   - name: The form field name.
    ///   - fileName: The `filename`.
    ///   - mimeType: The part's `Content-Type`.
    public func append(stream: InputStream, length: Int64, name: String, fileName: String, mimeType: String) {
        parts.append(
            Part(
                headers: Self.headers(name: name, fileName: fileName, mimeType: mimeType), body: .stream(stream), length: length, name: name
            ))
    }

    /// Appends a part with headers of your own.
    /// - Parameters:
    ///   - headers: The part's headers (a `Content-Disposition` among them); CR and LF in
    ///     values are replaced by spaces so a value cannot add headers.
    ///   - body: The bytes.
    public func append(headers: HTTPHeaders, body: Data) {
        var safe = HTTPHeaders()
        for (name, value) in headers { safe[Self.singleLine(name)] = Self.singleLine(value) }
        let name = safe["Content-Disposition"] ?? ""
        parts.append(Part(headers: safe, body: .data(body), length: Int64(body.count), name: name))
    }

    /// Slows the upload down: at most `packetSize` bytes are handed to the connection per
    /// read, with `delay` seconds before each packet after the first (AFNetworking's
    /// `throttleBandwidthWithPacketSize:delay:`, for flaky mobile links). Off by default.
    ///
    /// A throttled body is sent as a stream; on Linux URLSession sends every stream body with
    /// chunked transfer encoding (no `Content-Length`), so the server must accept chunked uploads.
    /// The waits happen on a thread of Conveyor's on Apple platforms and on the curl transport
    /// (libcurl's rate limit); with the URLSession transport on Linux they hold up the client's
    /// other transfers meanwhile (see "Stream bodies and throttling" in Uploads and Downloads).
    /// - Parameters:
    ///   - packetSize: Bytes per packet; AFNetworking's default was 16 kB.
    ///   - delay: Seconds before each packet after the first; AFNetworking's default was 0.2.
    public func throttleBandwidth(packetSize: Int = 16 * 1024, delay: TimeInterval = 0.2) {
        throttle = (packetSize, delay)
    }

    // MARK: - Headers

    static func headers(name: String, fileName: String?, mimeType: String?) -> HTTPHeaders {
        var disposition = "form-data; name=\"\(escape(name))\""
        if let fileName { disposition += "; filename=\"\(escape(fileName))\"" }
        var headers: HTTPHeaders = ["Content-Disposition": disposition]
        if let mimeType { headers["Content-Type"] = singleLine(mimeType) }
        return headers
    }

    /// Escapes a name for a quoted `Content-Disposition` parameter as the HTML standard's
    /// multipart/form-data encoding does: `"` → `%22`, CR → `%0D`, LF → `%0A`, so a file name
    /// can neither end the quoted string nor start a new header.
    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(
            of: "\n", with: "%0A")
    }

    static func singleLine(_ value: String) -> String {
        value.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
    }

    func headerData(for part: Part) -> Data {
        var text = "--\(boundary)\r\n"
        for (name, value) in part.headers { text += "\(name): \(value)\r\n" }
        return Data((text + "\r\n").utf8)
    }

    var closingBoundary: Data { Data("--\(boundary)--\r\n".utf8) }

    static func checkedLength(of fileURL: URL) throws -> Int64 {
        do {
            return try BodyFile.length(of: fileURL)
        } catch {
            // The same checks, reported as the multipart body's failure.
            guard case .bodyFileFailed(let reason) = error else { throw error }
            switch reason {
            case .notAFileURL(let url): throw ConveyorError.multipartEncodingFailed(reason: .notAFileURL(url))
            case .fileNotFound(let url): throw ConveyorError.multipartEncodingFailed(reason: .fileNotFound(url))
            case .fileIsDirectory(let url): throw ConveyorError.multipartEncodingFailed(reason: .fileIsDirectory(url))
            case .fileNotReadable(let url), .notARegularFile(let url), .fileChanged(let url), .framingConflict(let url, _):
                throw ConveyorError.multipartEncodingFailed(reason: .fileNotReadable(url))
            }
        }
    }
}

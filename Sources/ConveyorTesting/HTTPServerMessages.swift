import Conveyor
import Foundation

extension LocalHTTPServer {
    /// A request as the server received it.
    public struct Request: Sendable, CustomStringConvertible {
        /// The method token, for example `GET`.
        public let method: String
        /// The request target as sent: path and query.
        public let target: String
        /// The header fields in the order received.
        public let headers: HTTPHeaders
        /// The body, de-chunked.
        public let body: Data
        /// Whether the body arrived with `Transfer-Encoding: chunked`.
        public let wasChunked: Bool
        /// The number of body bytes received (also when the body itself was not kept).
        public let bodyLength: Int
        /// Whether the body was longer than ``LocalHTTPServer/maximumStoredBodySize`` and so
        /// was read and dropped; ``body`` is then empty.
        public let bodyWasDiscarded: Bool

        /// The path without the query, percent-decoded.
        public var path: String {
            let raw = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
            return raw.removingPercentEncoding ?? raw
        }

        /// The raw query (after `?`), if any.
        public var query: String? {
            let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            return parts.count == 2 ? String(parts[1]) : nil
        }

        /// The query decoded into pairs, in order (`+` is a space, as HTML forms send it).
        public var queryItems: [(name: String, value: String)] { Self.decodeForm(query ?? "") }

        /// The first value of a query parameter.
        /// - Parameter name: The parameter name.
        /// - Returns: The value, or nil.
        public func queryValue(_ name: String) -> String? { queryItems.first { $0.name == name }?.value }

        /// The body as UTF-8 text (invalid bytes replaced).
        public var bodyText: String { String(decoding: body, as: UTF8.self) }

        /// A one-line summary, `GET /path?query`.
        public var description: String { "\(method) \(target)" }

        /// Decodes `application/x-www-form-urlencoded` text into pairs.
        /// - Parameter text: The encoded text.
        /// - Returns: The decoded pairs, in order.
        public static func decodeForm(_ text: String) -> [(name: String, value: String)] {
            text.split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decode(_ part: Substring) -> String {
                    let plus = part.replacingOccurrences(of: "+", with: " ")
                    return plus.removingPercentEncoding ?? plus
                }
                return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
            }
        }
    }

    /// What a route answers.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// Header fields; `Content-Length` is added for `.data` bodies when missing.
        public var headers: HTTPHeaders
        /// The body, or a fault to inject instead of a normal answer.
        public var body: Body

        /// How the body is produced.
        public enum Body: Sendable {
            /// Bytes sent with a `Content-Length`.
            case data(Data)
            /// Bytes written by a closure as they are produced; chunked when `chunked` is true,
            /// else the closure must honour the `Content-Length` it set (or close to end it).
            case stream(chunked: Bool, @Sendable (ResponseWriter) throws -> Void)
            /// Misbehave instead of answering.
            case fault(Fault)
            /// These exact bytes instead of a response (status line, headers and all), then
            /// the connection closes: for malformed responses no well-formed route can produce.
            case raw(Data)
        }

        /// Creates a response.
        /// - Parameters:
        ///   - status: The status code; default 200.
        ///   - headers: The header fields; default none.
        ///   - body: The body; default empty.
        public init(status: Int = 200, headers: HTTPHeaders = [:], body: Body = .data(Data())) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// A response with a text body.
        /// - Parameters:
        ///   - text: The body, UTF-8 encoded.
        ///   - status: The status code; default 200.
        ///   - contentType: The `Content-Type`; default `text/plain; charset=utf-8`.
        /// - Returns: The response.
        public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> Response {
            Response(status: status, headers: ["Content-Type": contentType], body: .data(Data(text.utf8)))
        }

        /// Serves `data` as a resumable resource: an `ETag` and `Accept-Ranges: bytes`, and for a
        /// `Range: bytes=first-[last]` request a 206 with `Content-Range` — unless an `If-Range`
        /// names another validator, in which case the whole body with 200 (RFC 9110 §14).
        /// - Parameters:
        ///   - data: The resource.
        ///   - etag: Its strong entity tag, quoted (`"v1"`).
        ///   - request: The request being answered.
        /// - Returns: 200, 206, or 416 for a range past the end.
        public static func ranged(_ data: Data, etag: String, for request: Request) -> Response {
            var headers: HTTPHeaders = ["ETag": etag, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"]
            let validatorMatches = request.headers["If-Range"].map { $0 == etag } ?? true
            guard validatorMatches, let range = request.headers["Range"], range.hasPrefix("bytes=") else {
                return Response(headers: headers, body: .data(data))
            }
            let bounds = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
            guard let first = Int(bounds.first ?? ""), first < data.count else {
                headers["Content-Range"] = "bytes */\(data.count)"
                return Response(status: 416, headers: headers)
            }
            let last = min(bounds.count > 1 ? Int(bounds[1]) ?? data.count - 1 : data.count - 1, data.count - 1)
            headers["Content-Range"] = "bytes \(first)-\(last)/\(data.count)"
            return Response(status: 206, headers: headers, body: .data(data.subdata(in: first..<(last + 1))))
        }

        /// A response with a JSON body made by `JSONSerialization` (keys sorted).
        /// - Parameters:
        ///   - object: A JSON-compatible value.
        ///   - status: The status code; default 200.
        /// - Returns: The response.
        public static func json(_ object: Any, status: Int = 200) -> Response {
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data("null".utf8)
            return Response(status: status, headers: ["Content-Type": "application/json"], body: .data(data + Data("\n".utf8)))
        }
    }

    /// Ways the server can misbehave, for tests of error paths.
    public enum Fault: String, Sendable, CaseIterable {
        /// Sends the head and half of a 1 kB body, then closes.
        case closeMidBody = "close-mid-body"
        /// Sends the head of a 1 kB body, then sends nothing until the client gives up.
        case stallAfterHeaders = "stall-after-headers"
        /// Resets the connection (TCP RST) without answering.
        case reset
        /// Answers with a status line that is not HTTP.
        case malformedStatusLine = "malformed-status-line"
        /// Announces 1000 bytes, sends 10, then closes.
        case lyingContentLength = "lying-content-length"
        /// Closes the connection without answering.
        case closeBeforeHeaders = "close-before-headers"
        /// Sends `100 Continue` every 10 ms and never a final answer, until the client gives up.
        case endlessContinue = "endless-continue"
        /// A resumable body that a `Range` request does not continue. Without `Range`: the head of
        /// ``LocalHTTPServer/rangeFaultBody`` (1,200 bytes, `ETag` ``LocalHTTPServer/rangeFaultETag``,
        /// `Accept-Ranges: bytes`) and its first 600 bytes, then the connection closes. With
        /// `Range: bytes=N-`: a 206 whose `Content-Range` starts 100 bytes before N.
        case rangeStartsElsewhere = "range-starts-elsewhere"
        /// As ``rangeStartsElsewhere``, but the 206 has no `Content-Range` (and the bytes from N).
        case rangeWithoutContentRange = "range-without-content-range"
        /// As ``rangeStartsElsewhere``, but the 206 starts at N and says the whole body is 2,400 bytes.
        case rangeOtherTotal = "range-other-total"
        /// As ``rangeStartsElsewhere``, but the 206 starts at N under another `ETag`.
        case rangeOtherValidator = "range-other-validator"
        /// As ``rangeStartsElsewhere``, but the 206 starts at N and carries no `ETag`.
        case rangeWithoutValidator = "range-without-validator"
        /// As ``rangeStartsElsewhere``, but the 206 starts at N, under the same `ETag` and total,
        /// and stops one byte before the end (`Content-Range: bytes N-1198/1200`).
        case rangeEndsShort = "range-ends-short"
    }

    /// Writes a streamed response body.
    public final class ResponseWriter: Sendable {
        let connection: ServerConnection
        let chunked: Bool
        let server: LocalHTTPServer

        init(connection: ServerConnection, chunked: Bool, server: LocalHTTPServer) {
            self.connection = connection
            self.chunked = chunked
            self.server = server
        }

        /// Sends bytes now (as one chunk when chunked).
        /// - Parameter data: The bytes; empty is ignored.
        /// - Throws: When the client has gone.
        public func write(_ data: Data) throws {
            guard !data.isEmpty else { return }
            if chunked {
                try connection.send(Data(String(data.count, radix: 16).utf8) + Data("\r\n".utf8) + data + Data("\r\n".utf8))
            } else {
                try connection.send(data)
            }
        }

        /// Waits up to `seconds`, returning early (with false) when the server stops.
        /// - Parameter seconds: How long to wait.
        /// - Returns: Whether the server is still running.
        @discardableResult
        public func pause(_ seconds: Double) -> Bool { server.wait(seconds) }

        /// Waits up to `seconds` for the client to close the connection, writing nothing: a
        /// test that a client stops a transfer waits for this event instead of a time. Also true
        /// when the server stops (it shuts the connection down).
        /// - Parameter seconds: The longest wait; it only ends a wait for a client that never closes.
        /// - Returns: Whether the client closed (or reset) the connection; false at the deadline,
        ///   and at once when the client sends bytes instead.
        public func waitForClientToClose(timeout seconds: Double) -> Bool { connection.waitForPeerClose(seconds: seconds) }
    }
}

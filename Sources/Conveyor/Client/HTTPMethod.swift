/// An HTTP request method.
///
/// A struct rather than an enum so that extension methods (`PROPFIND`, `QUERY`) can be spelled
/// without a library change: `HTTPMethod(rawValue: "PROPFIND")`.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// `GET`
    public static let get = HTTPMethod(rawValue: "GET")
    /// `HEAD`
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `POST`
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `OPTIONS`
    public static let options = HTTPMethod(rawValue: "OPTIONS")

    /// The method token as sent on the wire, upper-cased.
    public let rawValue: String

    /// Creates a method from its token; the token is upper-cased.
    /// - Parameter rawValue: The method name, for example `"GET"`.
    public init(rawValue: String) { self.rawValue = rawValue.uppercased() }

    /// The method token.
    public var description: String { rawValue }

    /// Whether repeating the request has the same effect as sending it once (RFC 9110 §9.2.2).
    public var isIdempotent: Bool {
        [HTTPMethod.get, .head, .put, .delete, .options, HTTPMethod(rawValue: "TRACE")].contains(self)
    }
}

/// An ordered collection of HTTP header fields whose names compare case-insensitively.
///
/// Setting a name that is already present replaces its value in place, so the order in which
/// headers were first set is the order in which they are sent and logged.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    private var fields: [(name: String, value: String)] = []

    /// The request headers that carry credentials: `Authorization`, `Proxy-Authorization`,
    /// `Cookie`, `X-API-Key`, `X-Auth-Token` (names compare case-insensitively).
    ///
    /// One set, read by every rule about credentials: a redirect or an adapter that leaves the
    /// origin removes them (``RedirectPolicy/defaultHeadersRemovedAcrossOrigins``), a client
    /// sends its default ones only to its credential origins, the logger hides their values by
    /// name (``Redaction/headerNames``, with the response's `Set-Cookie`) and by value wherever
    /// they appear again (``Redaction/masksSentValues``). Add another credential header to a
    /// ``RedirectPolicy``'s ``RedirectPolicy/headersRemovedAcrossOrigins`` and to the logger's
    /// ``Redaction/headerNames``.
    public static let credentialNames: Set<String> = ["Authorization", "Proxy-Authorization", "Cookie", "X-API-Key", "X-Auth-Token"]

    /// Creates an empty collection.
    public init() {}

    /// Creates a collection from a dictionary; names are ordered alphabetically.
    /// - Parameter dictionary: Header names and values.
    public init(_ dictionary: [String: String]) {
        for (name, value) in dictionary.sorted(by: { $0.key < $1.key }) { self[name] = value }
    }

    /// Creates a collection from fields whose names are already unique (ignoring case), in order.
    init(uniqueFields: [(name: String, value: String)]) {
        fields = uniqueFields
    }

    /// Creates a collection from a literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    /// The value for a header name (case-insensitive); setting `nil` removes the field.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value }
        set {
            let index = fields.firstIndex { $0.name.equalsIgnoringASCIICase(name) }
            switch (index, newValue) {
            case (let index?, let value?): fields[index].value = value
            case (let index?, nil): fields.remove(at: index)
            case (nil, let value?): fields.append((name, value))
            case (nil, nil): break
            }
        }
    }

    /// The number of fields.
    public var count: Int { fields.count }

    /// The fields as a dictionary, for APIs such as `URLRequest.allHTTPHeaderFields`.
    public var dictionary: [String: String] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// Iterates the fields in order.
    public func makeIterator() -> some IteratorProtocol<(name: String, value: String)> {
        fields.makeIterator()
    }

    /// Fields compare equal when they have the same names (ignoring case), values and order.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy {
                $0.name.equalsIgnoringASCIICase($1.name) && $0.value == $1.value
            }
    }

    /// The fields, one `Name: value` per line.
    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }
}

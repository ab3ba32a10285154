import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The MIME types the XML serializers accept: `application/xml`, `text/xml`, any `+xml` type.
let xmlContentTypes: Set<String> = ["application/xml", "text/xml", "+xml"]

/// Returns an `XMLParser` over the body, ready for your delegate (AFNetworking's
/// `responseXMLParser`). Use ``XMLTreeResponseSerializer`` for a parsed tree instead.
public struct XMLParserResponseSerializer: ResponseSerializer {
    /// The MIME types accepted: `application/xml`, `text/xml`, `+xml`.
    public let acceptableContentTypes: Set<String>? = xmlContentTypes

    /// Creates the serializer.
    public init() {}

    /// A parser over `data`; nothing is parsed until you call `parse()`.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> XMLParser {
        XMLParser(data: data)
    }
}

/// A parsed XML element: name, attributes, child elements and text content.
public struct XMLTree: Sendable, Equatable, CustomStringConvertible {
    /// The element's name (qualified name as written).
    public var name: String
    /// The element's attributes.
    public var attributes: [String: String]
    /// The child elements, in document order.
    public var children: [XMLTree]
    /// The element's own text (CDATA included), with surrounding whitespace trimmed.
    public var text: String

    /// Creates an element.
    /// - Parameters:
    ///   - name: The name.
    ///   - attributes: The attributes; default none.
    ///   - children: The children; default none.
    ///   - text: The text; default empty.
    public init(name: String, attributes: [String: String] = [:], children: [XMLTree] = [], text: String = "") {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// The first child with `name`.
    /// - Parameter name: The element name.
    /// - Returns: The child, or nil.
    public func child(named name: String) -> XMLTree? { children.first { $0.name == name } }

    /// Every child with `name`.
    /// - Parameter name: The element name.
    /// - Returns: The children.
    public func children(named name: String) -> [XMLTree] { children.filter { $0.name == name } }

    /// `<name attr="v">text…</name>`, one line, for debugging.
    public var description: String {
        let attributes = self.attributes.sorted { $0.key < $1.key }.map { " \($0.key)=\"\($0.value)\"" }.joined()
        return "<\(name)\(attributes)>\(text)\(children.map(\.description).joined())</\(name)>"
    }

    /// Parses a document into its root element.
    /// - Parameter data: The XML document.
    /// - Returns: The root element.
    /// - Throws: ``ResponseSerializationError/invalidXML(line:column:reason:)``.
    public static func parse(_ data: Data) throws -> XMLTree {
        let parser = XMLParser(data: data)
        let builder = XMLTreeBuilder()
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else {
            throw ResponseSerializationError.invalidXML(
                line: parser.lineNumber, column: parser.columnNumber,
                reason: parser.parserError.map { "\($0.localizedDescription)" } ?? "no root element"
            )
        }
        return root
    }
}

/// Collects parser events into an ``XMLTree``; used by one parse on one thread.
private final class XMLTreeBuilder: NSObject, XMLParserDelegate {
    var stack: [XMLTree] = []
    var root: XMLTree?

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        stack.append(XMLTree(name: elementName, attributes: attributes))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: block, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard var element = stack.popLast() else { return }
        element.text = element.text.trimmingCharacters(in: .whitespacesAndNewlines)
        if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
    }
}

/// Parses the body into an ``XMLTree``.
public struct XMLTreeResponseSerializer: ResponseSerializer {
    /// The MIME types accepted: `application/xml`, `text/xml`, `+xml`.
    public let acceptableContentTypes: Set<String>? = xmlContentTypes

    /// Creates the serializer.
    public init() {}

    /// Parses `data`.
    /// - Throws: ``ResponseSerializationError/invalidXML(line:column:reason:)``.
    public func serialize(request: URLRequest, response: HTTPResponseHead, data: Data) throws -> XMLTree {
        try XMLTree.parse(data)
    }
}

extension ResponseSerializer where Self == XMLParserResponseSerializer {
    /// An `XMLParser` over the body, ready to parse.
    public static var xmlParser: XMLParserResponseSerializer { XMLParserResponseSerializer() }
}

extension ResponseSerializer where Self == XMLTreeResponseSerializer {
    /// The body parsed into an ``XMLTree``.
    public static var xml: XMLTreeResponseSerializer { XMLTreeResponseSerializer() }
}

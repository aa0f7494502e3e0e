// An XML element as a value: what the SOAP module hands its callers after libxml2 has parsed
// a document, and what they hand back to be written. Names are namespace-qualified; text is
// the element's own character data (its text and CDATA children, joined), unescaped.

public struct QName: Hashable, Sendable, CustomStringConvertible {
    /// The namespace URI ("" for none).
    public var namespace: String
    public var local: String

    public init(_ namespace: String, _ local: String) {
        self.namespace = namespace
        self.local = local
    }

    public var description: String { namespace.isEmpty ? local : "{\(namespace)}\(local)" }
}

public struct XMLElement: Sendable, Equatable {
    /// The namespace of `xml:lang`, bound to `xml` in every document.
    public static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"

    public var name: QName
    public var attributes: [QName: String]
    public var children: [XMLElement]
    public var text: String

    public init(_ name: QName, attributes: [QName: String] = [:], text: String = "", children: [XMLElement] = []) {
        self.name = name
        self.attributes = attributes
        self.text = text
        self.children = children
    }

    /// An element in namespace `ns` with children.
    public init(_ ns: String, _ local: String, attributes: [String: String] = [:], _ children: [XMLElement] = []) {
        self.init(QName(ns, local), attributes: Dictionary(uniqueKeysWithValues: attributes.map { (QName("", $0.key), $0.value) }),
                  children: children)
    }

    /// An element in namespace `ns` holding only text.
    public init(_ ns: String, _ local: String, text: String, attributes: [String: String] = [:]) {
        self.init(QName(ns, local), attributes: Dictionary(uniqueKeysWithValues: attributes.map { (QName("", $0.key), $0.value) }),
                  text: text)
    }

    /// The first child named `local` (in any namespace: ONVIF's clients differ in which
    /// schema version's namespace they put a parameter in, never in its name).
    public func child(_ local: String) -> XMLElement? { children.first { $0.name.local == local } }

    /// Children named `local`, in any namespace.
    public func children(_ local: String) -> [XMLElement] { children.filter { $0.name.local == local } }

    /// A descendant by a path of local names: `element["StreamSetup", "Transport", "Protocol"]`.
    public subscript(_ path: String...) -> XMLElement? { self[path] }

    /// A descendant by a path of local names given as an array.
    public subscript(_ path: [String]) -> XMLElement? {
        var e: XMLElement? = self
        for p in path { e = e?.child(p) }
        return e
    }

    /// An unqualified attribute's value (or one in any namespace when none is unqualified).
    public func attribute(_ local: String) -> String? {
        attributes[QName("", local)] ?? attributes.first { $0.key.local == local }?.value
    }

    /// The text with XML's whitespace at both ends removed (xs:token-like values).
    public var trimmedText: String {
        String(text.drop { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }
            .reversed().drop { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }.reversed())
    }
}

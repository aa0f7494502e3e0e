// A document read by libxml2 into XMLElement values. Only what a SOAP message may be: a
// Document Type Declaration is refused as soon as the parser meets it (SOAP 1.2, part 1, 5:
// "a SOAP message MUST NOT contain a Document Type Declaration") — so no entity is ever
// declared, none expanded (no "billion laughs"), no external entity or DTD fetched (and the
// parser may not touch the network anyway). Errors name the line and libxml2's reason.

internal import CXML2  // internal: ICU's headers under libxml2's clash with Foundation's own ICU in a module that sees both

public enum XMLReadError: Error, Equatable, CustomStringConvertible {
    /// Not well-formed XML: libxml2's reason and the line.
    case malformed(String)
    /// A Document Type Declaration, which a SOAP message must not have.
    case documentType
    case empty

    public var description: String {
        switch self {
        case .malformed(let why): "not well-formed XML: \(why)"
        case .documentType: "a Document Type Declaration (<!DOCTYPE …>), which a SOAP message must not contain"
        case .empty: "an empty body where an XML document was expected"
        }
    }
}

public enum XMLReader {
    /// libxml2 wants its globals set up once, before threads use it.
    private static let ready: Void = { xmlInitParser() }()

    public static func read(_ bytes: [UInt8]) throws(XMLReadError) -> XMLElement {
        _ = ready
        guard !bytes.isEmpty else { throw .empty }
        guard let ctxt = xmlNewParserCtxt() else { throw .malformed("libxml2 could not make a parser (out of memory)") }
        defer { xmlFreeParserCtxt(ctxt) }
        // The DTD's first callback stops the parse and leaves a mark where the context's
        // user field is (ours alone: nothing else of libxml2's reads it).
        ctxt.pointee.sax.pointee.internalSubset = { ctx, _, _, _ in
            guard let ctx else { return }
            let c = ctx.assumingMemoryBound(to: xmlParserCtxt.self)
            c.pointee._private = UnsafeMutableRawPointer(bitPattern: 1)
            xmlStopParser(c)
        }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let doc = bytes.withUnsafeBufferPointer { b in
            b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) { p in
                xmlCtxtReadMemory(ctxt, p, Int32(b.count), "message.xml", nil, options)
            }
        }
        defer { if let doc { xmlFreeDoc(doc) } }
        if ctxt.pointee._private != nil { throw .documentType }
        guard let doc, ctxt.pointee.wellFormed != 0, let root = xmlDocGetRootElement(doc) else {
            if let e = xmlCtxtGetLastError(ctxt), let m = e.pointee.message {
                let why = String(cString: m).trimmingSuffix()
                throw .malformed("\(why) (line \(e.pointee.line))")
            }
            throw .malformed("no root element")
        }
        // Well-formed but not namespace-well-formed (a prefix never declared): libxml2 goes on
        // and keeps the prefix as part of the name, which no client meant. SOAP is XML with
        // namespaces: refused, as libxml2 reported it.
        guard ctxt.pointee.nsWellFormed != 0 else {
            let why = xmlCtxtGetLastError(ctxt).flatMap { $0.pointee.message.map { String(cString: $0).trimmingSuffix() } } ?? "a namespace error"
            throw .malformed("\(why) (line \(xmlCtxtGetLastError(ctxt)?.pointee.line ?? 0))")
        }
        return element(root)
    }

    private static func element(_ node: xmlNodePtr) -> XMLElement {
        var e = XMLElement(QName(string(node.pointee.ns?.pointee.href), string(node.pointee.name)))
        var attr = node.pointee.properties
        while let a = attr {
            var value = ""
            var t = a.pointee.children
            while let n = t { value += string(n.pointee.content); t = n.pointee.next }
            e.attributes[QName(string(a.pointee.ns?.pointee.href), string(a.pointee.name))] = value
            attr = a.pointee.next
        }
        var child = node.pointee.children
        while let c = child {
            switch c.pointee.type {
            case XML_ELEMENT_NODE: e.children.append(element(c))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE: e.text += string(c.pointee.content)
            default: break  // comments, processing instructions
            }
            child = c.pointee.next
        }
        return e
    }

    static func string(_ p: UnsafePointer<xmlChar>?) -> String { p.map { String(cString: $0) } ?? "" }
    static func string(_ p: UnsafeMutablePointer<xmlChar>?) -> String { p.map { String(cString: $0) } ?? "" }
}

extension String {
    func trimmingSuffix() -> String {
        var s = self
        while let last = s.last, last == "\n" || last == " " { s.removeLast() }
        return s
    }
}

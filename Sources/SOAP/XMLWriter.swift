// XMLElement values written as a document by libxml2 (its tree and serializer: escaping,
// namespaces and encoding are the library's, not string pasting). Each namespace gets the
// prefix the caller's table gives it (ONVIF's clients read some prefixes literally: a topic's
// `tns1:` is text, not a QName), declared once on the root; any other gets `ns1`, `ns2`, ….

internal import CXML2  // internal: ICU's headers under libxml2's clash with Foundation's own ICU in a module that sees both

public enum XMLWriter {
    /// `prefixes`: namespace URI → prefix, declared on the root whether used or not when
    /// `declareAll` (a topic's text may name one no element uses).
    public static func write(_ root: XMLElement, prefixes: [String: String], declareAll: Bool = true) -> [UInt8] {
        // Swift strings as libxml2's `const xmlChar *`: copies freed when the write ends
        // (libxml2 copies what it keeps).
        var pool: [UnsafeMutablePointer<xmlChar>] = []
        defer { for p in pool { vf_xml_free(p) } }
        func x(_ s: String) -> UnsafePointer<xmlChar>? {
            guard let p = xmlCharStrdup(s) else { return nil }
            pool.append(p)
            return UnsafePointer(p)
        }
        guard let doc = xmlNewDoc(x("1.0")) else { return [] }
        defer { xmlFreeDoc(doc) }
        var spaces: [String: xmlNsPtr] = [:]
        guard let top = xmlNewDocNode(doc, nil, x(root.name.local), nil) else { return [] }
        xmlDocSetRootElement(doc, top)
        func ns(_ uri: String) -> xmlNsPtr? {
            if uri.isEmpty { return nil }
            if let n = spaces[uri] { return n }
            let prefix = prefixes[uri] ?? "ns\(spaces.count + 1)"
            let n = xmlNewNs(top, x(uri), x(prefix))
            spaces[uri] = n
            return n
        }
        if declareAll { for uri in prefixes.keys.sorted() { _ = ns(uri) } }
        func fill(_ node: xmlNodePtr, _ e: XMLElement) {
            xmlSetNs(node, ns(e.name.namespace))
            for (name, value) in e.attributes.sorted(by: { $0.key.local < $1.key.local }) {
                if name.namespace.isEmpty { xmlNewProp(node, x(name.local), x(value)) }
                else if name.namespace == XMLElement.xmlNamespace {  // xml:lang: the predeclared prefix
                    xmlNewNsProp(node, xmlSearchNsByHref(doc, node, x(name.namespace)), x(name.local), x(value))
                } else { xmlNewNsProp(node, ns(name.namespace), x(name.local), x(value)) }
            }
            if !e.text.isEmpty, let t = xmlNewDocText(doc, x(e.text)) { xmlAddChild(node, t) }
            for c in e.children {
                guard let child = xmlNewDocNode(doc, nil, x(c.name.local), nil) else { continue }
                xmlAddChild(node, child)
                fill(child, c)
            }
        }
        fill(top, root)
        var out: UnsafeMutablePointer<xmlChar>?
        var size: Int32 = 0
        xmlDocDumpMemoryEnc(doc, &out, &size, "UTF-8")
        guard let out else { return [] }
        defer { vf_xml_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(size)))
    }
}

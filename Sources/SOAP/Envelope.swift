// SOAP 1.2 envelopes (W3C SOAP 1.2 part 1): a request's header blocks and body read from
// bytes; a response or a fault written. ONVIF is SOAP 1.2 only, and its clients refuse a 1.1
// envelope in an answer, so a 1.1 request is answered with VersionMismatch (5.4.7), in 1.2.

public enum SOAPNamespace {
    public static let envelope = "http://www.w3.org/2003/05/soap-envelope"
    public static let envelope11 = "http://schemas.xmlsoap.org/soap/envelope/"
}

/// A request as read: its header blocks and the body's first element (the operation).
public struct SOAPRequest: Sendable {
    public var header: [XMLElement]
    public var operation: XMLElement
}

/// A SOAP 1.2 fault (5.4): who is at fault, ONVIF's subcodes, and a reason a person can read.
public struct SOAPFault: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable { case versionMismatch = "VersionMismatch", mustUnderstand = "MustUnderstand", sender = "Sender", receiver = "Receiver" }
    public var code: Code
    /// Outermost first: e.g. ter:NotAuthorized; ter:InvalidArgVal, ter:NoProfile.
    public var subcodes: [QName]
    public var reason: String

    public init(_ code: Code, _ subcodes: [QName] = [], _ reason: String) {
        self.code = code
        self.subcodes = subcodes
        self.reason = reason
    }

    public var description: String { "\(code.rawValue)\(subcodes.map { "/\($0.local)" }.joined()): \(reason)" }
}

public enum Envelope {
    /// The request in `bytes`, or the fault to answer it with.
    public static func read(_ bytes: [UInt8]) throws(SOAPFault) -> SOAPRequest {
        let root: XMLElement
        do throws(XMLReadError) { root = try XMLReader.read(bytes) } catch {
            throw SOAPFault(.sender, [], "The message is not a SOAP envelope: \(error).")
        }
        guard root.name.local == "Envelope" else {
            throw SOAPFault(.sender, [], "The message's root is \(root.name), not a SOAP 1.2 Envelope.")
        }
        guard root.name.namespace == SOAPNamespace.envelope else {
            throw SOAPFault(.versionMismatch, [], root.name.namespace == SOAPNamespace.envelope11
                ? "SOAP 1.1 is not supported: ONVIF is SOAP 1.2 (\(SOAPNamespace.envelope))."
                : "The envelope's namespace is \(root.name.namespace), not SOAP 1.2's.")
        }
        let header = root.children.first { $0.name == QName(SOAPNamespace.envelope, "Header") }?.children ?? []
        guard let body = root.children.first(where: { $0.name == QName(SOAPNamespace.envelope, "Body") }) else {
            throw SOAPFault(.sender, [], "The envelope has no Body.")
        }
        guard let operation = body.children.first else { throw SOAPFault(.sender, [], "The envelope's Body is empty: no operation.") }
        return SOAPRequest(header: header, operation: operation)
    }

    /// An envelope around `body` (header blocks optional), with `prefixes` declared on it.
    public static func write(body: [XMLElement], header: [XMLElement] = [], prefixes: [String: String]) -> [UInt8] {
        var children: [XMLElement] = []
        if !header.isEmpty { children.append(XMLElement(SOAPNamespace.envelope, "Header", header)) }
        children.append(XMLElement(SOAPNamespace.envelope, "Body", body))
        return XMLWriter.write(XMLElement(SOAPNamespace.envelope, "Envelope", children), prefixes: withEnvelope(prefixes))
    }

    /// The fault as an envelope. Code values are QNames written as text, so their prefixes
    /// must be the declared ones: the envelope's is `s` unless `prefixes` says otherwise.
    public static func write(fault: SOAPFault, prefixes: [String: String]) -> [UInt8] {
        let p = withEnvelope(prefixes)
        let env = SOAPNamespace.envelope
        func qname(_ q: QName) -> String { (p[q.namespace].map { "\($0):" } ?? "") + q.local }
        var code = XMLElement(env, "Code", [XMLElement(env, "Value", text: qname(QName(env, fault.code.rawValue)))])
        // Subcodes nest: Code/Subcode/Value, Code/Subcode/Subcode/Value, …
        func subcode(_ rest: ArraySlice<QName>) -> XMLElement? {
            guard let first = rest.first else { return nil }
            var s = XMLElement(env, "Subcode", [XMLElement(env, "Value", text: qname(first))])
            if let inner = subcode(rest.dropFirst()) { s.children.append(inner) }
            return s
        }
        if let s = subcode(fault.subcodes[...]) { code.children.append(s) }
        var text = XMLElement(env, "Text", text: fault.reason)
        text.attributes[QName(XMLElement.xmlNamespace, "lang")] = "en"
        let f = XMLElement(env, "Fault", [code, XMLElement(env, "Reason", [text])])
        return write(body: [f], prefixes: prefixes)
    }

    private static func withEnvelope(_ prefixes: [String: String]) -> [String: String] {
        var p = prefixes
        if p[SOAPNamespace.envelope] == nil { p[SOAPNamespace.envelope] = "s" }
        return p
    }
}

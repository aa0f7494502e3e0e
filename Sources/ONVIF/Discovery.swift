// WS-Discovery (2005/04) as ONVIF devices speak it: a Probe read from a datagram, whether
// this device matches it (its Types and Scopes), and the ProbeMatches, Hello and Bye
// envelopes. Pure: the socket is the application's (ViewfinderApp/Services/DiscoveryService).

import SOAP

public enum WSDiscovery {
    public static let addressing = "http://schemas.xmlsoap.org/ws/2004/08/addressing"
    public static let discovery = "http://schemas.xmlsoap.org/ws/2005/04/discovery"
    public static let network = "http://www.onvif.org/ver10/network/wsdl"
    public static let group = "239.255.255.250"
    public static let port: UInt16 = 3702
    static let anonymous = addressing + "/role/anonymous"
    static let multicastTo = "urn:schemas-xmlsoap-org:ws:2005:04:discovery"
    static let prefixes: [String: String] = [
        SOAPNamespace.envelope: "s", addressing: "a", discovery: "d", network: "dn", ONVIFNamespace.device: "tds",
    ]
    /// The types this device is, as a Probe names them (local names: a probe's prefixes are
    /// declared in the probe, which the reader does not keep, and no other type shares them).
    static let types = ["NetworkVideoTransmitter", "Device"]

    public struct Probe: Sendable, Equatable {
        public var messageID: String
        public var types: [String]
        public var scopes: [String]
    }

    /// The device as discovery describes it.
    public struct Endpoint: Sendable, Equatable {
        /// "urn:uuid:…", the same across restarts.
        public var address: String
        public var scopes: [String]
        public var xaddrs: [String]
        public init(address: String, scopes: [String], xaddrs: [String]) { self.address = address; self.scopes = scopes; self.xaddrs = xaddrs }
    }

    /// A Probe in `bytes`; nil for anything else (another device's Hello, a ProbeMatch, noise).
    public static func probe(_ bytes: [UInt8]) -> Probe? {
        guard let r = try? Envelope.read(bytes), r.operation.name == QName(discovery, "Probe") else { return nil }
        let id = r.header.first { $0.name == QName(addressing, "MessageID") }?.trimmedText ?? ""
        func words(_ e: XMLElement?) -> [String] { (e?.text ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }).map(String.init) }
        return Probe(messageID: id, types: words(r.operation.child("Types")).map { String($0.split(separator: ":").last ?? "") },
                     scopes: words(r.operation.child("Scopes")))
    }

    /// Whether this device answers `probe`: no types or one of ours, and every scope asked for
    /// held (RFC 3986 matching: a scope matches ours when it is ours or a path prefix of it at
    /// a segment boundary, case-insensitive in scheme and host as the standard's default rule).
    public static func matches(_ probe: Probe, _ endpoint: Endpoint) -> Bool {
        guard probe.types.isEmpty || probe.types.contains(where: types.contains) else { return false }
        return probe.scopes.allSatisfy { asked in
            endpoint.scopes.contains { ours in
                let a = asked.lowercased(), o = ours.lowercased()
                return o == a || (o.hasPrefix(a) && (a.hasSuffix("/") || o.dropFirst(a.count).first == "/"))
            }
        }
    }

    /// The answer to `probe`, sent to its sender.
    public static func probeMatches(_ probe: Probe, _ endpoint: Endpoint, messageID: String, instance: Int, message: Int) -> [UInt8] {
        Envelope.write(body: [XMLElement(discovery, "ProbeMatches", [XMLElement(discovery, "ProbeMatch", description(endpoint))])],
                       header: header(action: "ProbeMatches", to: anonymous, messageID: messageID, instance: instance, message: message,
                                      relatesTo: probe.messageID),
                       prefixes: prefixes)
    }

    /// The device joining the network (multicast at start).
    public static func hello(_ endpoint: Endpoint, messageID: String, instance: Int, message: Int) -> [UInt8] {
        Envelope.write(body: [XMLElement(discovery, "Hello", description(endpoint))],
                       header: header(action: "Hello", to: multicastTo, messageID: messageID, instance: instance, message: message),
                       prefixes: prefixes)
    }

    /// The device leaving (multicast at stop).
    public static func bye(_ endpoint: Endpoint, messageID: String, instance: Int, message: Int) -> [UInt8] {
        Envelope.write(body: [XMLElement(discovery, "Bye", [reference(endpoint)])],
                       header: header(action: "Bye", to: multicastTo, messageID: messageID, instance: instance, message: message),
                       prefixes: prefixes)
    }

    static func reference(_ e: Endpoint) -> XMLElement {
        XMLElement(addressing, "EndpointReference", [XMLElement(addressing, "Address", text: e.address)])
    }

    static func description(_ e: Endpoint) -> [XMLElement] {
        [reference(e),
         XMLElement(discovery, "Types", text: "dn:NetworkVideoTransmitter tds:Device"),
         XMLElement(discovery, "Scopes", text: e.scopes.joined(separator: " ")),
         XMLElement(discovery, "XAddrs", text: e.xaddrs.joined(separator: " ")),
         XMLElement(discovery, "MetadataVersion", text: "1")]
    }

    static func header(action: String, to: String, messageID: String, instance: Int, message: Int, relatesTo: String? = nil) -> [XMLElement] {
        var h = [XMLElement(addressing, "MessageID", text: messageID)]
        if let relatesTo { h.append(XMLElement(addressing, "RelatesTo", text: relatesTo)) }
        h += [XMLElement(addressing, "To", text: to),
              XMLElement(addressing, "Action", text: "\(discovery)/\(action)"),
              XMLElement(discovery, "AppSequence", attributes: ["InstanceId": String(instance), "MessageNumber": String(message)])]
        return h
    }
}

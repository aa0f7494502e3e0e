// The namespaces ONVIF's messages use, and the prefixes Viewfinder writes them with (the
// ones ONVIF's own documents use: clients read a topic's `tns1:` as text).

import SOAP

public enum ONVIFNamespace {
    public static let device = "http://www.onvif.org/ver10/device/wsdl"
    public static let media = "http://www.onvif.org/ver10/media/wsdl"
    public static let media2 = "http://www.onvif.org/ver20/media/wsdl"
    public static let schema = "http://www.onvif.org/ver10/schema"
    public static let error = "http://www.onvif.org/ver10/error"
    public static let ptz = "http://www.onvif.org/ver20/ptz/wsdl"
    public static let imaging = "http://www.onvif.org/ver20/imaging/wsdl"
    public static let events = "http://www.onvif.org/ver10/events/wsdl"
    public static let notification = "http://docs.oasis-open.org/wsn/b-2"
    public static let topicsSchema = "http://docs.oasis-open.org/wsn/t-1"
    /// ONVIF's topic namespace (`tns1:` in every topic's text).
    public static let topics = "http://www.onvif.org/ver10/topics"
    public static let addressing = "http://www.w3.org/2005/08/addressing"
    public static let xmlSchema = "http://www.w3.org/2001/XMLSchema"
    public static let security = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
    public static let securityUtility = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
    public static let passwordDigest = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest"

    static let prefixes: [String: String] = [
        SOAPNamespace.envelope: "s", device: "tds", media: "trt", media2: "tr2", schema: "tt", error: "ter", events: "tev",
        notification: "wsnt", topicsSchema: "wstop", topics: "tns1", addressing: "wsa", xmlSchema: "xs",
        ptz: "tptz", imaging: "timg",
    ]
}

/// Element builders in the schema's and the services' namespaces, so that a response reads
/// like the XML it writes.
func tt(_ name: String, _ children: [XMLElement] = [], attributes: [String: String] = [:]) -> XMLElement {
    XMLElement(ONVIFNamespace.schema, name, attributes: attributes, children)
}
func tt(_ name: String, _ text: String, attributes: [String: String] = [:]) -> XMLElement {
    XMLElement(ONVIFNamespace.schema, name, text: text, attributes: attributes)
}
func tt(_ name: String, _ value: Bool) -> XMLElement { tt(name, value ? "true" : "false") }
func tt(_ name: String, _ value: Int) -> XMLElement { tt(name, String(value)) }

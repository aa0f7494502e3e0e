// What the service suites share: a server over the two-camera device whose gate lets the user
// "operator" operate and anyone else read, called with a body whose prefixes the suite names,
// and a fault's last subcode.

import ONVIF
import SOAP

struct SignedCaller {
    let server: ONVIFServer
    /// Prefix → namespace, declared on the envelope.
    let namespaces: [String: String]
    var now = 1_795_930_800.0

    init(_ device: TwoCameras, _ namespaces: [String: String]) {
        server = ONVIFServer(device: device) { c, _ in c?.username == "operator" ? .granted(.operate) : .granted(.read) }
        self.namespaces = namespaces
    }

    /// The answer's status and its body's element (a Fault when refused).
    func call(_ body: String, user: String = "operator") async throws -> (Int, XMLElement) {
        let declared = namespaces.sorted { $0.key < $1.key }.map { " xmlns:\($0.key)=\"\($0.value)\"" }.joined()
        let xml = """
            <s:Envelope xmlns:s="\(SOAPNamespace.envelope)"\(declared)>\
            <s:Header><Security xmlns="\(ONVIFNamespace.security)"><UsernameToken><Username>\(user)</Username><Password>p</Password></UsernameToken></Security></s:Header>\
            <s:Body>\(body)</s:Body></s:Envelope>
            """
        let answer = await server.handle(Array(xml.utf8), context: ONVIFContext(host: "h:80", secure: false, remoteAddress: "a", now: now))
        return (answer.status, try Envelope.read(answer.body).operation)
    }

    /// A fault's innermost subcode's local name ("" for none).
    static func subcode(_ fault: XMLElement) -> String {
        var code = fault["Code", "Subcode"], last = ""
        while let c = code { last = String(c.child("Value")?.trimmedText.split(separator: ":").last ?? ""); code = c.child("Subcode") }
        return last
    }
}

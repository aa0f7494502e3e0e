// WS-Discovery's messages without a socket: a Probe read whatever its prefixes, which probes
// this device answers (types, RFC 3986 scope matching), and the answers' addressing.

import ONVIF
import SOAP
import Testing

@Suite struct DiscoveryTests {
    let me = WSDiscovery.Endpoint(address: "urn:uuid:1", scopes: ["onvif://www.onvif.org/Profile/Streaming", "onvif://www.onvif.org/name/Viewfinder%20rear"],
                                  xaddrs: ["http://10.0.0.2:8080/onvif/device_service"])

    func probe(_ types: String, scopes: String? = nil) -> [UInt8] {
        Array("""
            <e:Envelope xmlns:e="\(SOAPNamespace.envelope)" xmlns:w="\(WSDiscovery.addressing)" xmlns:q="\(WSDiscovery.discovery)" xmlns:x="http://www.onvif.org/ver10/network/wsdl">\
            <e:Header><w:MessageID>urn:uuid:probe-7</w:MessageID></e:Header><e:Body><q:Probe><q:Types>\(types)</q:Types>\
            \(scopes.map { "<q:Scopes>\($0)</q:Scopes>" } ?? "")</q:Probe></e:Body></e:Envelope>
            """.utf8)
    }

    @Test func whichProbesAreAnswered() throws {
        let p = try #require(WSDiscovery.probe(probe("x:NetworkVideoTransmitter")))
        #expect(p.messageID == "urn:uuid:probe-7" && p.types == ["NetworkVideoTransmitter"])
        #expect(WSDiscovery.matches(p, me))
        #expect(WSDiscovery.matches(try #require(WSDiscovery.probe(probe(""))), me), "no types: every device")
        #expect(!WSDiscovery.matches(try #require(WSDiscovery.probe(probe("x:Printer"))), me))
        for (scopes, answered) in [("onvif://www.onvif.org/Profile/Streaming", true), ("ONVIF://www.onvif.org/name", true),
                                   ("onvif://www.onvif.org/name/View", false), ("onvif://www.onvif.org/location/x", false),
                                   ("onvif://www.onvif.org/Profile/Streaming onvif://www.onvif.org/name/", true)] {
            #expect(WSDiscovery.matches(try #require(WSDiscovery.probe(probe("", scopes: scopes))), me) == answered, "\(scopes)")
        }
        #expect(WSDiscovery.probe(Array("not xml".utf8)) == nil)
        #expect(WSDiscovery.probe(WSDiscovery.hello(me, messageID: "urn:uuid:h", instance: 1, message: 1)) == nil, "a Hello is not a Probe")
    }

    @Test func theAnswersSayWhoAndWhere() throws {
        let p = try #require(WSDiscovery.probe(probe("x:NetworkVideoTransmitter")))
        let answer = try Envelope.read(WSDiscovery.probeMatches(p, me, messageID: "urn:uuid:m", instance: 5, message: 2))
        #expect(answer.header.first { $0.name.local == "RelatesTo" }?.trimmedText == "urn:uuid:probe-7")
        #expect(answer.header.first { $0.name.local == "Action" }?.trimmedText == "http://schemas.xmlsoap.org/ws/2005/04/discovery/ProbeMatches")
        let match = try #require(answer.operation["ProbeMatch"])
        #expect(match["EndpointReference", "Address"]?.trimmedText == "urn:uuid:1")
        #expect(match["XAddrs"]?.trimmedText == "http://10.0.0.2:8080/onvif/device_service")
        #expect(match["Types"]?.trimmedText == "dn:NetworkVideoTransmitter tds:Device")
        let text = String(decoding: WSDiscovery.probeMatches(p, me, messageID: "urn:uuid:m", instance: 5, message: 2), as: UTF8.self)
        #expect(text.contains("xmlns:dn=\"http://www.onvif.org/ver10/network/wsdl\""), "the Types' prefixes are declared")
        let bye = try Envelope.read(WSDiscovery.bye(me, messageID: "urn:uuid:b", instance: 5, message: 3))
        #expect(bye.operation.name.local == "Bye" && bye.operation["EndpointReference", "Address"]?.trimmedText == "urn:uuid:1")
    }
}

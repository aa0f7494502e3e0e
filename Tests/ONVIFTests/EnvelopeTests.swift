// SOAP 1.2 envelopes through libxml2: what a SOAP message may not be (a DTD, so no entity
// and no external fetch ever), what is not one (1.1, no Body), and what we write (escaped,
// namespaced, a fault's codes as QNames whose prefixes are declared).

import SOAP
import Testing

@Suite struct EnvelopeTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
    let env = SOAPNamespace.envelope

    @Test func readsHeaderAndOperation() throws {
        let r = try Envelope.read(bytes("""
            <?xml version="1.0" encoding="UTF-8"?>
            <s:Envelope xmlns:s="\(env)" xmlns:tds="http://www.onvif.org/ver10/device/wsdl">
              <s:Header><h:Thing xmlns:h="urn:x">1</h:Thing></s:Header>
              <s:Body><tds:GetCapabilities><tds:Category>All</tds:Category></tds:GetCapabilities></s:Body>
            </s:Envelope>
            """))
        #expect(r.header.map(\.name) == [QName("urn:x", "Thing")])
        #expect(r.operation.name == QName("http://www.onvif.org/ver10/device/wsdl", "GetCapabilities"))
        #expect(r.operation.child("Category")?.trimmedText == "All")
    }

    @Test func aDocumentTypeDeclarationIsRefusedBeforeItsEntities() {
        // The billion laughs: ten levels of ten references. Refused at the DOCTYPE, so nothing
        // is expanded; likewise an external entity (a file read) never resolves.
        var dtd = "<!ENTITY a0 \"ha\">"
        for i in 1...9 { dtd += "<!ENTITY a\(i) \"" + String(repeating: "&a\(i - 1);", count: 10) + "\">" }
        let laughs = "<?xml version=\"1.0\"?><!DOCTYPE s:Envelope [\(dtd)]><s:Envelope xmlns:s=\"\(env)\"><s:Body><x>&a9;</x></s:Body></s:Envelope>"
        let external = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><s:Envelope xmlns:s=\"\(env)\"><s:Body><x>&e;</x></s:Body></s:Envelope>"
        for doc in [laughs, external] {
            #expect(throws: XMLReadError.documentType) { try XMLReader.read(bytes(doc)) }
            do { _ = try Envelope.read(bytes(doc)); Issue.record("read") } catch {
                #expect(error.code == .sender)
                #expect(error.reason.contains("Document Type Declaration"))
            }
        }
    }

    @Test func malformedXMLSaysWhereAndWhy() {
        do { _ = try Envelope.read(bytes("<s:Envelope xmlns:s=\"\(env)\">\n<s:Body><a></b></s:Body></s:Envelope>")); Issue.record("read") } catch {
            #expect(error.code == .sender)
            #expect(error.reason.contains("line 2"), "\(error.reason)")
        }
        #expect(throws: XMLReadError.empty) { try XMLReader.read([]) }
        // A prefix never declared (FuzzSOAP's find: libxml2 read "s:ace" as a name, and it
        // did not write back the same): not namespace-well-formed, refused naming it.
        do {
            _ = try Envelope.read(bytes("<s:Envelope xmlns:s=\"\(env)\"><s:Body><a q:ace=\"1\"/></s:Body></s:Envelope>"))
            Issue.record("read")
        } catch {
            #expect(error.code == .sender && error.reason.contains("q"), "\(error.reason)")
        }
        do { _ = try Envelope.read(bytes("<?xml version=\"1.0\"?>")); Issue.record("read") } catch {
            #expect(error.code == .sender)
        }
    }

    @Test func soap11IsAVersionMismatchAndABodyIsRequired() {
        do { _ = try Envelope.read(bytes("<e:Envelope xmlns:e=\"http://schemas.xmlsoap.org/soap/envelope/\"><e:Body><x/></e:Body></e:Envelope>")); Issue.record("read") } catch {
            #expect(error.code == .versionMismatch)
            #expect(error.reason.contains("SOAP 1.1"))
        }
        // An Envelope in no namespace is not SOAP 1.2's either (5.4.7: VersionMismatch).
        do { _ = try Envelope.read(bytes("<Envelope/>")); Issue.record("read") } catch { #expect(error.code == .versionMismatch) }
        for doc in ["<s:Envelope xmlns:s=\"\(env)\"/>", "<s:Envelope xmlns:s=\"\(env)\"><s:Body/></s:Envelope>"] {
            do { _ = try Envelope.read(bytes(doc)); Issue.record("read \(doc)") } catch { #expect(error.code == .sender) }
        }
    }

    @Test func writesEscapedNamespacedText() throws {
        let body = XMLElement("urn:t", "Answer", [XMLElement("urn:t", "Text", text: "a < b & \"c\" ]]> é")])
        let out = Envelope.write(body: [body], prefixes: ["urn:t": "t"])
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.contains("<t:Text>a &lt; b &amp; \"c\" ]]&gt; é</t:Text>"), "\(text)")
        // And it reads back as it was.
        let back = try Envelope.read(out)
        #expect(back.operation == body)
    }

    @Test func aFaultCarriesItsSubcodesAsDeclaredQNames() throws {
        let fault = SOAPFault(.sender, [QName("http://www.onvif.org/ver10/error", "NotAuthorized")], "Sender not Authorized")
        let out = Envelope.write(fault: fault, prefixes: ["http://www.onvif.org/ver10/error": "ter"])
        let f = try Envelope.read(out).operation
        #expect(f.name == QName(env, "Fault"))
        #expect(f["Code", "Value"]?.text == "s:Sender")
        #expect(f["Code", "Subcode", "Value"]?.text == "ter:NotAuthorized")
        #expect(f["Reason", "Text"]?.text == "Sender not Authorized")
        #expect(f["Reason", "Text"]?.attributes[QName(XMLElement.xmlNamespace, "lang")] == "en")
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.contains("xmlns:ter=\"http://www.onvif.org/ver10/error\""))
    }
}

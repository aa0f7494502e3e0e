// libFuzzer target: a SOAP request's body as an ONVIF client (or anyone on the network) sends
// it, through Envelope.read — libxml2 with no DTD and no network, then the envelope's shape.
//
// Input: the request body (any bytes).
//
// Invariants beyond "no crash":
//  - what was read writes back (XMLWriter, libxml2's serializer) to a document that reads
//    again to the same header and operation: the values handed to the services are exactly
//    what the bytes said, whatever the prefixes, escapes or CDATA;
//  - a refusal writes as a fault envelope that reads back as a Fault: a client always gets
//    SOAP 1.2, never a broken document.
import Foundation
import SOAP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size <= 65_536 else { return 0 }  // the server's body limit is far above; beyond this the fuzzer only slows
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do throws(SOAPFault) {
        let request = try Envelope.read(bytes)
        let written = Envelope.write(body: [request.operation], header: request.header, prefixes: [:])
        let again: SOAPRequest
        do throws(SOAPFault) { again = try Envelope.read(written) } catch {
            fatalError("a read envelope wrote as one that does not read: \(error)\n\(String(decoding: written, as: UTF8.self))")
        }
        if again.operation != request.operation || again.header != request.header {
            fatalError("round trip changed the request:\n\(request.operation)\n->\n\(again.operation)")
        }
    } catch {
        let fault = Envelope.write(fault: error, prefixes: [:])
        do throws(SOAPFault) {
            let answer = try Envelope.read(fault)
            guard answer.operation.name == QName(SOAPNamespace.envelope, "Fault") else {
                fatalError("a fault wrote as \(answer.operation.name)")
            }
        } catch {
            fatalError("a fault envelope does not read: \(error)\n\(String(decoding: fault, as: UTF8.self))")
        }
    }
    return 0
}

// libFuzzer target: the Authorization header as a client sends it, through Credentials.parse
// and DigestAnswer, the parsing every request meets before routing when accounts are on.
//
// Input: the header's value, as sent (any bytes; the server reads a header as UTF-8).
//
// Invariants beyond "no crash" (of Credentials.parse, for any header):
//  - DigestAnswer round-trips: the fields rendered back as `name="value"` (backslash before
//    `"` and `\`) parse to the same fields;
//  - a response computed as RFC 7616 says from those fields is right for its HA1, and for no
//    other HA1 or method: the check that turns libmicrohttpd's "invalid" into stale=true
//    says yes only to a client that knows the password.

import Auth
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size <= 16384 else { return 0 }  // beyond any header libmicrohttpd's buffer holds
    let header = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = Credentials.parse(authorization: header, queryToken: nil)
    // The parameters as any header gives them (Credentials.parse hands what follows "Digest ").
    let answer = DigestAnswer(parameters: header)

    // Round trip: every field whose name can be written back, quoted and escaped.
    // Escaped byte by byte, as the parser reads: String's replacingOccurrences matches whole
    // characters, and a quote followed by a combining mark (U+0486) is one character that is
    // not a quote, so it went out unescaped (a fuzzer finding in the harness, not the parser).
    func quoted(_ s: String) -> String {
        var out: [UInt8] = [34]
        for b in s.utf8 {
            if b == 34 || b == 92 { out.append(92) }
            out.append(b)
        }
        out.append(34)
        return String(decoding: out, as: UTF8.self)
    }
    func rendered(_ fields: [String: String]) -> String {
        fields.keys.sorted().map { "\($0)=\(quoted(fields[$0]!))" }.joined(separator: ", ")
    }
    let kept = answer.fields.filter { name, _ in
        !name.isEmpty && name.utf8.allSatisfy { $0 > 32 && $0 != 61 && $0 != 44 && $0 != 34 && $0 < 127 }
    }
    let again = DigestAnswer(parameters: rendered(kept))
    if again.fields != kept {
        fatalError("DigestAnswer round trip: \(kept) -> \(rendered(kept).debugDescription) -> \(again.fields)")
    }

    // A right answer over the header's own nonce, uri, nc and cnonce.
    for algorithm in Hashes.Algorithm.allCases {
        let ha1 = Hashes.digest(algorithm, "user:Viewfinder:\(answer.fields["nonce"] ?? "")")
        let h = { (s: String) in Hashes.hex(Hashes.digest(algorithm, s)) }
        var fields = kept
        fields["algorithm"] = algorithm.rawValue
        fields["nonce"] = fields["nonce"] ?? "n"
        fields["uri"] = fields["uri"] ?? "/"
        let ha2 = h("GET:\(fields["uri"]!)")
        if fields["qop"] != nil {
            fields["qop"] = "auth"
            fields["nc"] = fields["nc"] ?? "00000001"
            fields["cnonce"] = fields["cnonce"] ?? "c"
            fields["response"] = h("\(Hashes.hex(ha1)):\(fields["nonce"]!):\(fields["nc"]!):\(fields["cnonce"]!):auth:\(ha2)")
        } else {
            fields["response"] = h("\(Hashes.hex(ha1)):\(fields["nonce"]!):\(ha2)")
        }
        let right = DigestAnswer(parameters: rendered(fields))
        guard right.isRight(ha1: ha1, method: "GET") else { fatalError("a right \(algorithm) answer refused: \(fields)") }
        var other = ha1
        other[0] ^= 1
        if right.isRight(ha1: other, method: "GET") || right.isRight(ha1: ha1, method: "POST") {
            fatalError("a \(algorithm) answer right for another password or method: \(fields)")
        }
    }
    return 0
}

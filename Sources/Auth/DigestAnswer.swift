// A Digest Authorization header's fields (RFC 7616 §3.4), and the one question about them
// libmicrohttpd 0.9.75 cannot be asked: is the response right for this password, whatever
// became of its nonce?
//
// Why it is asked: libmicrohttpd keeps each nonce's count in a table slot picked by a hash of
// the nonce, and a nonce issued later evicts one that shares its slot. A client that then
// answers the evicted nonce rightly is told MHD_NO, the answer for a wrong password. A
// browser that gets that asks its user for the password again (a headless one hangs on the
// prompt), and the failure counts against its address. A page load draws a burst of fresh
// nonces (0.9.75 binds each nonce to its URL), so this happened to about one page load in
// ten with a table of 1024 (see cmhd_start). The server answers a right response whose nonce
// libmicrohttpd refused with stale=true, RFC 7616 §3.3's "the nonce was not valid, the
// credentials were": the client retries on the fresh nonce without asking anyone. Who gets in
// stays libmicrohttpd's decision alone; this check never lets a request through.

import Foundation

public struct DigestAnswer: Sendable, Equatable {
    /// The header's parameters by lower-cased name, values unquoted.
    public let fields: [String: String]

    /// From the text after "Digest ": `name=token` or `name="quoted \" string"`, comma-separated.
    public init(parameters: some StringProtocol) {
        var fields: [String: String] = [:]
        var bytes = Array(parameters.utf8)[...]
        func skip(_ set: Set<UInt8>) { while let b = bytes.first, set.contains(b) { bytes.removeFirst() } }
        let space: Set<UInt8> = [32, 9], separators: Set<UInt8> = [32, 9, 44]
        while true {
            skip(separators)
            guard !bytes.isEmpty else { break }
            let name = bytes.prefix { $0 != 61 && $0 != 44 }  // up to "=" or ","
            bytes.removeFirst(name.count)
            guard bytes.first == 61 else { continue }  // a name without a value: skipped
            bytes.removeFirst()
            skip(space)
            var value: [UInt8] = []
            if bytes.first == 34 {  // a quoted-string; a backslash quotes the byte after it
                bytes.removeFirst()
                while let b = bytes.popFirst(), b != 34 {
                    if b == 92, let next = bytes.popFirst() { value.append(next) } else if b != 92 { value.append(b) }
                }
            } else {
                value = Array(bytes.prefix { $0 != 44 && !space.contains($0) })
                bytes.removeFirst(value.count)
            }
            let key = String(decoding: name, as: UTF8.self).trimmingCharacters(in: Self.spaceOrTab).lowercased()
            fields[key] = String(decoding: value, as: UTF8.self)
        }
        self.fields = fields
    }

    private static let spaceOrTab = CharacterSet(charactersIn: " \t")

    /// "MD5" when the header names none (RFC 7616 §3.4), upper-cased.
    public var algorithm: String { (fields["algorithm"] ?? "MD5").uppercased() }

    /// Whether `response` is what a client knowing the password whose HA1 is `ha1` sends for
    /// `method`: KD(HA1, nonce:nc:cnonce:qop:H(method:uri)) with qop=auth, or RFC 2069's
    /// KD(HA1, nonce:H(method:uri)) without qop. auth-int and the -sess algorithms are not
    /// offered by this server and are never right.
    public func isRight(ha1: [UInt8], method: String) -> Bool {
        guard let hash = Hashes.Algorithm(rawValue: algorithm), ha1.count == hash.size,
              let nonce = fields["nonce"], let uri = fields["uri"],
              let response = fields["response"].flatMap({ Hashes.bytes(hex: $0) }) else { return false }
        let ha2 = Hashes.hex(Hashes.digest(hash, "\(method):\(uri)"))
        let expected: [UInt8]
        switch fields["qop"] {
        case nil:
            expected = Hashes.digest(hash, "\(Hashes.hex(ha1)):\(nonce):\(ha2)")
        case "auth":
            guard let nc = fields["nc"], let cnonce = fields["cnonce"] else { return false }
            expected = Hashes.digest(hash, "\(Hashes.hex(ha1)):\(nonce):\(nc):\(cnonce):auth:\(ha2)")
        default:
            return false
        }
        return Hashes.constantTimeEqual(expected, response)
    }
}

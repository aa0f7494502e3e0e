// The syntax of a request's header fields that libmicrohttpd 0.9.75 lets through (at its
// default strictness) and the RFCs tell a server to refuse: a field name that is not a token
// (empty, with a space, a NUL or a byte above 0x7E), a value holding NUL, CR or LF, and an
// HTTP/1.1 request without exactly one Host. Each is a way for two parsers of one byte stream
// (a proxy in front and this server) to see different requests, so the request is refused
// and its connection closed before anything reads it.

enum HeaderSyntax {
    /// RFC 9110 §5.6.2: tchar.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }

    /// Why this field is malformed, or nil. RFC 9110 §5.1: a name is a token; §5.5: a value
    /// holding NUL, CR or LF must be refused (or those bytes replaced, which would hand the
    /// application a value the client did not send).
    static func problem(name: some Collection<UInt8>, value: some Collection<UInt8>) -> String? {
        if name.isEmpty { return "A header line has no name before its colon." }
        if !name.allSatisfy(isTokenByte) {
            return "The header name '\(printable(name))' is not a token (RFC 9110 §5.1): no spaces, controls or non-ASCII bytes."
        }
        if value.contains(where: { $0 == 0 || $0 == 13 || $0 == 10 }) {
            return "The value of header '\(printable(name))' holds a NUL, CR or LF byte (RFC 9110 §5.5)."
        }
        return nil
    }

    /// RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host (an HTTP/1.0 one may have none).
    static func hostProblem(version: String, hosts: Int) -> String? {
        if hosts > 1 { return "Host is given \(hosts) times; a request has one (RFC 9112 §3.2)." }
        if hosts == 0 && version == "HTTP/1.1" { return "An HTTP/1.1 request needs a Host header (RFC 9112 §3.2)." }
        return nil
    }

    /// Bytes as ASCII, anything else as \xNN, at most 64 of them.
    static func printable(_ bytes: some Collection<UInt8>) -> String {
        var s = ""
        for b in bytes.prefix(64) {
            if b >= 0x20 && b < 0x7F { s.unicodeScalars.append(Unicode.Scalar(b)) } else { s += "\\x" + hex(b) }
        }
        return bytes.count > 64 ? s + "…" : s
    }

    private static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
    }
}

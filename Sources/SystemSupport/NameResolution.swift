// A host name's addresses (getaddrinfo), numeric: what a WebRTC answer names as a candidate
// (webrtc.publicAddresses takes a dynamic-DNS name, the address a router has today). Blocks up
// to the resolver's own timeout: call it off the request threads.

import Glibc

/// getaddrinfo's failure: its EAI code, said as gai_strerror says it (errno only for EAI_SYSTEM).
public struct NameResolutionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var code: Int32
    public var message: String

    public init(name: String, code: Int32, message: String) {
        self.name = name; self.code = code; self.message = message
    }

    public var description: String { "getaddrinfo \(name) failed: \(message)" }
}

extension Sys {
    /// `name`'s IPv4 and IPv6 addresses, numeric, in the resolver's order, each once. A numeric
    /// address is answered as itself, without a lookup.
    public static func addresses(of name: String) throws(NameResolutionError) -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(name, nil, &hints, &list)
        guard rc == 0 else {
            let message = rc == EAI_SYSTEM ? String(cString: strerror(Glibc.errno)) : String(cString: gai_strerror(rc))
            throw NameResolutionError(name: name, code: rc, message: message)
        }
        defer { freeaddrinfo(list) }
        var out: [String] = []
        var p = list
        while let a = p {
            defer { p = a.pointee.ai_next }
            guard let addr = a.pointee.ai_addr else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(addr, a.pointee.ai_addrlen, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let numeric = String(cString: host)
            if !out.contains(numeric) { out.append(numeric) }
        }
        return out
    }
}

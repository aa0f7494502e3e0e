// Reverse proxies whose word on the client's address is taken (`server.trustedProxies`).
//
// Behind nginx or Caddy every connection comes from the proxy's address, so the limits, the
// sign-in lockout and the logs would see one client. A proxy on this list names the real one
// in `Forwarded: for=` (RFC 7239) or `X-Forwarded-For`; the header is read from the right,
// each hop added by a trusted proxy skipped, and the first address a trusted proxy did not
// add is the client (entries further left were written by the client itself, and anyone can
// write anything there). A request from an address not on the list keeps its own address,
// whatever its headers say.

import Foundation

public struct TrustedProxies: Sendable, Equatable {
    /// One range: an address and a prefix length, IPv4 (4 bytes) or IPv6 (16).
    struct Range: Sendable, Equatable {
        var bytes: [UInt8]
        var prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var bits = prefix
            for i in 0..<bytes.count where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                if address[i] & mask != bytes[i] & mask { return false }
                bits -= 8
            }
            return true
        }
    }

    let ranges: [Range]

    public static let none = TrustedProxies(ranges: [])

    init(ranges: [Range]) { self.ranges = ranges }

    /// Parses addresses and CIDR ranges ("127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"). Throws
    /// the first entry that is neither.
    public init(_ entries: [String]) throws(Problem) {
        var ranges: [Range] = []
        for entry in entries {
            let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let bytes = Self.parse(String(parts[0])) else { throw Problem(entry: entry) }
            var prefix = bytes.count * 8
            if parts.count == 2 {
                guard let p = Int(parts[1]), (0...prefix).contains(p) else { throw Problem(entry: entry) }
                prefix = p
            }
            ranges.append(Range(bytes: bytes, prefix: prefix))
        }
        self.ranges = ranges
    }

    public struct Problem: Error, Equatable, CustomStringConvertible {
        public let entry: String
        public var description: String { "'\(entry)' is not an address or a CIDR range (\"10.0.0.0/8\", \"::1\")" }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    /// An IPv4 address in network byte order (as MHD's callbacks have it).
    public func contains(ipv4 address: UInt32) -> Bool {
        guard !ranges.isEmpty, address != 0 else { return false }
        return contains(withUnsafeBytes(of: address) { Array($0) })
    }

    public func contains(_ address: String) -> Bool {
        guard !ranges.isEmpty, let bytes = Self.parse(address) else { return false }
        return contains(bytes)
    }

    private func contains(_ bytes: [UInt8]) -> Bool { ranges.contains { $0.contains(bytes) } }

    /// The client a request from `peer` stands for.
    public func client(peer: String, headers: [String: String]) -> String {
        guard contains(peer) else { return peer }
        let hops: [String]
        if let forwarded = headers["forwarded"] {
            hops = Self.forwardedFor(forwarded)
        } else if let xff = headers["x-forwarded-for"] {
            hops = xff.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        } else {
            return peer
        }
        for hop in hops.reversed() {
            guard Self.parse(hop) != nil else { return peer }  // garbage: trust nothing further
            if !contains(hop) { return hop }
        }
        return hops.first ?? peer  // every hop a trusted proxy: the leftmost is the client
    }

    /// The `for=` values of a Forwarded header, in order ("for=192.0.2.1", `for="[2001:db8::1]:4711"`).
    static func forwardedFor(_ header: String) -> [String] {
        var out: [String] = []
        for element in header.split(separator: ",") {
            for pair in element.split(separator: ";") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "for" else { continue }
                var v = kv[1].trimmingCharacters(in: .whitespaces)
                if v.hasPrefix("\"") && v.hasSuffix("\"") && v.count >= 2 { v = String(v.dropFirst().dropLast()) }
                if v.hasPrefix("["), let close = v.firstIndex(of: "]") {
                    v = String(v[v.index(after: v.startIndex)..<close])  // [v6]:port
                } else if v.filter({ $0 == ":" }).count == 1, let colon = v.firstIndex(of: ":") {
                    v = String(v[..<colon])  // v4:port
                }
                out.append(v)
            }
        }
        return out
    }

    /// 4 or 16 bytes, or nil when `text` is not an IPv4 or IPv6 address.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }
}

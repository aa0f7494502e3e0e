// webrtc.publicAddresses in an answer: a camera behind a router that forwards its WebRTC ports
// (webrtc.udpPorts) is reached at the router's address, which the camera cannot see. For each
// host candidate the peer gathered, the answer also offers each public address on the same
// port and transport (go2rtc's `candidates:`, MediaMTX's additional hosts): a viewer outside
// sends its checks there, the router forwards them to the port libnice listens on, and libnice
// answers them as it answers any check on that socket. Only the answer carries them: libnice
// has no socket on an address it does not own, and needs none.

public enum PublicCandidates {
    /// `answer` with a host candidate for each of `addresses` (numeric; IPv4 beside the IPv4
    /// candidates, IPv6 beside the IPv6 ones) on each port and transport its host candidates
    /// have, ranked just below them, before each section's end-of-candidates. An address a
    /// host candidate already has is not added again, nor one beside an active ICE-TCP candidate.
    public static func adding(_ addresses: [String], to answer: String) -> String {
        guard !addresses.isEmpty else { return answer }
        let lines = answer.components(separatedBy: "\r\n")
        var out: [String] = []
        var section: [String] = []
        func flush() {
            out += addingToSection(addresses, section)
            section = []
        }
        for line in lines {
            if line.hasPrefix("m=") { flush() }
            section.append(line)
        }
        flush()
        return out.joined(separator: "\r\n")
    }

    /// One candidate line's fields (RFC 8839: foundation, component, transport, priority,
    /// address, port, "typ", type, then extensions such as "tcptype passive").
    private struct Candidate {
        var fields: [String]
        var foundation: String { fields[0] }
        var component: String { fields[1] }
        var transport: String { fields[2].uppercased() }
        var priority: UInt32 { UInt32(fields[3]) ?? 0 }
        var address: String { fields[4] }
        var port: String { fields[5] }
        var type: String { fields[7] }
        var tcpType: String? { fields.firstIndex(of: "tcptype").flatMap { $0 + 1 < fields.count ? fields[$0 + 1] : nil } }

        init?(_ line: String) {
            guard line.hasPrefix("a=candidate:") else { return nil }
            let f = line.dropFirst("a=candidate:".count).split(separator: " ").map(String.init)
            guard f.count >= 8, f[6] == "typ" else { return nil }
            fields = f
        }
    }

    private static func addingToSection(_ addresses: [String], _ lines: [String]) -> [String] {
        let candidates = lines.compactMap(Candidate.init)
        // An active ICE-TCP candidate only connects out (its port is 9, the discard port): nothing
        // reaches it, so nothing stands beside it.
        let hosts = candidates.filter { $0.type == "host" && $0.tcpType != "active" }
        guard !hosts.isEmpty else { return lines }
        let known = Set(candidates.map(\.address))
        var added: [String] = []
        var seen = Set<String>()
        for (k, address) in addresses.enumerated() where !known.contains(address) {
            let ipv6 = address.contains(":")
            for h in hosts where h.address.contains(":") == ipv6 {
                let key = "\(address) \(h.component) \(h.transport) \(h.port) \(h.tcpType ?? "")"
                guard seen.insert(key).inserted else { continue }
                var f = h.fields
                // A foundation of its own (a different address is a different base for ICE's
                // frozen pairs), and a priority one local-preference step per address below.
                f[0] = String("\(h.foundation)p\(k)".prefix(32))
                f[3] = String(h.priority &- UInt32(256 * (k + 1)))
                f[4] = address
                added.append("a=candidate:" + f.joined(separator: " "))
            }
        }
        guard !added.isEmpty else { return lines }
        // After the section's last candidate (before end-of-candidates, where it has one).
        let at = (lines.lastIndex { $0.hasPrefix("a=candidate:") } ?? lines.count - 1) + 1
        return Array(lines[..<at]) + added + Array(lines[at...])
    }
}

// A trickled ICE fragment (RFC 8840's application/trickle-ice-sdpfrag), as a WHEP client PATCHes
// it to its session (RFC 9725, section 4.3): the ICE credentials it belongs to, its candidates
// under the media section (`a=mid:`) they are for, and whether gathering ended
// (`a=end-of-candidates`). Read strictly: a fragment with a line this grammar has not is refused
// whole, naming the line, and nothing of it is used.

public struct ICEFragment: Sendable, Equatable {
    public struct Candidate: Sendable, Equatable {
        /// The media section's `mid` the candidate came under (nil: before any `m=` line).
        public var mid: String?
        /// "candidate:…" as webrtcbin's add-ice-candidate takes it.
        public var line: String
    }

    public var ufrag: String?
    public var password: String?
    public var candidates: [Candidate] = []
    public var endOfCandidates = false

    /// At most this many candidates in one fragment: a browser gathers a handful per interface
    /// and server; more is not a client trickling.
    public static let maxCandidates = 64

    /// Bytes a fragment may have (the route answers 413 past them).
    public static let maxBytes = 16 * 1024

    public init(ufrag: String? = nil, password: String? = nil, candidates: [Candidate] = [], endOfCandidates: Bool = false) {
        self.ufrag = ufrag
        self.password = password
        self.candidates = candidates
        self.endOfCandidates = endOfCandidates
    }

    /// Parses `text`, or throws naming the first line it cannot take.
    public init(parsing text: String) throws(ICEFragmentError) {
        var mid: String?
        // "\r\n" is one Character (a newline), as "\n" is.
        for (n, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            if line.isEmpty { continue }
            func refuse(_ why: String) -> ICEFragmentError { .badLine(n + 1, String(line.prefix(80)), why) }
            if line.hasPrefix("m=") {
                mid = nil
                continue
            }
            guard line.hasPrefix("a=") else { throw refuse("a fragment has only a= and m= lines") }
            let attribute = line.dropFirst(2)
            let (key, value) = attribute.firstIndex(of: ":").map { (attribute[..<$0], attribute[attribute.index(after: $0)...]) }
                ?? (attribute, "")
            switch key {
            case "ice-ufrag":
                guard Self.isICEChars(value, 4...256) else { throw refuse("an ICE username fragment is 4 to 256 ICE characters") }
                if let ufrag, ufrag != value { throw refuse("a second, different ICE username fragment") }
                ufrag = String(value)
            case "ice-pwd":
                guard Self.isICEChars(value, 22...256) else { throw refuse("an ICE password is 22 to 256 ICE characters") }
                password = String(value)
            case "mid":
                guard !value.isEmpty, value.count <= 32, value.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                    throw refuse("a mid is 1 to 32 visible characters")
                }
                mid = String(value)
            case "candidate":
                if endOfCandidates { throw refuse("a candidate after a=end-of-candidates") }
                if let why = Self.candidateFault(value) { throw refuse(why) }
                guard candidates.count < Self.maxCandidates else { throw .tooManyCandidates(Self.maxCandidates) }
                candidates.append(Candidate(mid: mid, line: "candidate:" + value))
            case "end-of-candidates":
                endOfCandidates = true
            case "ice-options", "group", "ice-lite", "ice-pacing":
                continue  // the session's, already in the offer
            default:
                throw refuse("not an attribute of a trickled ICE fragment")
            }
        }
        if candidates.isEmpty && !endOfCandidates && ufrag == nil { throw .empty }
    }

    /// RFC 8839's ice-char: letters, digits, "+" and "/".
    static func isICEChars(_ s: Substring, _ length: ClosedRange<Int>) -> Bool {
        length.contains(s.utf8.count) && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2B || c == 0x2F
        }
    }

    /// What is wrong with a candidate attribute's value (RFC 8839, section 5.1), nil when nothing:
    /// foundation, component, transport, priority, address, port, `typ` and a known type; the
    /// extensions after it (raddr, rport, tcptype, generation, ufrag, network-id…) are libnice's
    /// to read.
    static func candidateFault(_ value: Substring) -> String? {
        let f = value.split(separator: " ", omittingEmptySubsequences: true)
        guard f.count >= 8 else { return "a candidate has foundation, component, transport, priority, address, port and typ" }
        guard isICEChars(f[0], 1...32) else { return "the foundation is 1 to 32 ICE characters" }
        guard let component = Int(f[1]), (1...256).contains(component) else { return "the component is a number 1 to 256" }
        guard ["udp", "tcp"].contains(f[2].lowercased()) else { return "the transport is UDP or TCP" }
        guard UInt32(f[3]) != nil else { return "the priority is a number up to 2^32-1" }
        guard f[4].count <= 253, f[4].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".:-_%".contains($0)) }) else {
            return "the address is an IPv4 or IPv6 address or a name"
        }
        guard let port = Int(f[5]), (0...65535).contains(port) else { return "the port is a number 0 to 65535" }
        guard f[6] == "typ", ["host", "srflx", "prflx", "relay"].contains(f[7]) else {
            return "typ is host, srflx, prflx or relay"
        }
        return nil
    }
}

public enum ICEFragmentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Line number (from 1), the line (its first 80 characters), what is wrong.
    case badLine(Int, String, String)
    case tooManyCandidates(Int)
    case empty

    public var description: String {
        switch self {
        case let .badLine(n, line, why): "Line \(n) of the ICE fragment ('\(line)'): \(why)."
        case let .tooManyCandidates(max): "An ICE fragment carries at most \(max) candidates."
        case .empty: "The ICE fragment has no candidate, no a=end-of-candidates and no ICE credentials."
        }
    }
}

// The ICE pair a peer selected, from webrtcbin's stats (their local-candidate and
// remote-candidate entries). Debian's GStreamer 1.22 labels the two ends the other way round:
// measured in Tests/live/test_nat.py, its "local-candidate" was the viewer's NATed address and
// its "remote-candidate" the camera's own host candidate. So each end is placed by what each
// side said of itself: an end among the answer's candidates is ours, one among the offer's is
// the viewer's. Two ends neither side named (both peer-reflexive: a forwarded port seen from
// outside) are taken as 1.22 labels them, the other way round.

import CGStreamerShim

enum SelectedPair {
    /// Each description's candidates, "address port".
    struct Ends: Sendable {
        var ours: Set<String>
        var theirs: Set<String>

        init(answer: String, offer: String) {
            ours = Self.candidates(answer)
            theirs = Self.candidates(offer)
        }

        static func candidates(_ sdp: String) -> Set<String> {
            var out = Set<String>()
            for line in sdp.split(whereSeparator: { $0 == "\r" || $0 == "\n" }) where line.hasPrefix("a=candidate:") {
                let f = line.split(separator: " ")
                if f.count >= 6 { out.insert("\(f[4]) \(f[5])") }
            }
            return out
        }
    }

    /// The pair as ours and theirs; nil while either end has no type yet.
    static func read(_ p: vfg_pair, _ ends: Ends) -> LinkReport.Pair? {
        guard let a = end(p.local), let b = end(p.remote) else { return nil }
        func key(_ e: LinkReport.End) -> String { "\(e.address) \(e.port)" }
        let asLabelled = ends.ours.contains(key(a)) || ends.theirs.contains(key(b))
        return asLabelled ? LinkReport.Pair(local: a, remote: b) : LinkReport.Pair(local: b, remote: a)
    }

    private static func end(_ c: vfg_candidate) -> LinkReport.End? {
        var c = c
        func text<T>(_ field: inout T) -> String {
            withUnsafeBytes(of: &field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        let type = text(&c.type)
        guard !type.isEmpty else { return nil }
        let relay = text(&c.relay_protocol)
        return LinkReport.End(type: type, protocol: text(&c.protocol), relayProtocol: relay.isEmpty || relay == "none" ? nil : relay,
                              address: text(&c.address), port: Int(c.port))
    }
}

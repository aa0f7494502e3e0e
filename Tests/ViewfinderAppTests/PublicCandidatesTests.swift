// webrtc.publicAddresses in an answer (Streaming/PublicCandidates): each public address beside
// every host candidate of its family (but an active ICE-TCP one), on the same component,
// transport, port and TCP type,
// ranked below it, before the section's end-of-candidates; server-reflexive and relayed
// candidates left alone; an address a candidate already has not added again.

import Streaming
import Testing

@Suite struct PublicCandidatesTests {
    let answer = [
        "v=0", "o=- 1 0 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE video0",
        "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 0.0.0.0", "a=mid:video0",
        "a=candidate:1 1 UDP 2015363327 192.168.1.20 50000 typ host",
        "a=candidate:2 1 TCP 1015021823 192.168.1.20 9 typ host tcptype active",
        "a=candidate:3 1 TCP 1010827519 192.168.1.20 50000 typ host tcptype passive",
        "a=candidate:4 1 UDP 2015363583 fe80::1 50001 typ host",
        "a=candidate:5 1 UDP 1677721855 198.51.100.9 61000 typ srflx raddr 192.168.1.20 rport 50000",
        "a=end-of-candidates", "a=rtpmap:96 H264/90000", "",
    ].joined(separator: "\r\n")

    func lines(_ sdp: String) -> [String] { sdp.components(separatedBy: "\r\n") }

    @Test func eachPublicAddressStandsBesideTheHostCandidatesOfItsFamily() {
        let out = lines(PublicCandidates.adding(["203.0.113.7", "2001:db8::7", "192.168.1.20"], to: answer))
        let added = out.filter { $0.contains("203.0.113.7") || $0.contains("2001:db8::7") }
        #expect(added == [
            "a=candidate:1p0 1 UDP 2015363071 203.0.113.7 50000 typ host",
            "a=candidate:3p0 1 TCP 1010827263 203.0.113.7 50000 typ host tcptype passive",
            "a=candidate:4p1 1 UDP 2015363071 2001:db8::7 50001 typ host",
        ])
        // Before the end of candidates; everything else as it was, in its order.
        let end = out.firstIndex(of: "a=end-of-candidates")!
        #expect(added.allSatisfy { out.firstIndex(of: $0)! < end })
        #expect(out.filter { !added.contains($0) } == lines(answer))
        #expect(!out.contains { $0.contains("192.168.1.20 50000 typ host") && $0.contains("p2") }, "an address already there is not added")
        #expect(PublicCandidates.adding([], to: answer) == answer)
    }

    @Test func aSectionWithoutHostCandidatesIsLeftAlone() {
        let relayed = answer.replacingOccurrences(of: " typ host", with: " typ relay")
        #expect(PublicCandidates.adding(["203.0.113.7"], to: relayed) == relayed)
    }
}

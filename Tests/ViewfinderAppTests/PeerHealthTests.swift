// Why a WebRTC peer ended, as the log says it: a connection never made told apart from one lost;
// and what an answer's candidates say of the ICE servers configured (the NAT rig's turn-refused
// case shows both against a real coturn).

import Testing
@testable import Streaming
@testable import ViewfinderApp

@Suite struct PeerHealthTests {
    @Test func aFailureSaysWhetherItEverConnected() {
        var never = PeerHealth(created: 0)
        let e1 = never.expired(.failed, silence: nil, now: 1, connectTimeout: 15)
        #expect(e1)
        #expect(never.reason(.failed, connectTimeout: 15) == "ICE failed: no candidate pair succeeded")
        var lost = PeerHealth(created: 0)
        let e2 = lost.expired(.connected, silence: 0.5, now: 1, connectTimeout: 15)
        #expect(!e2)
        let e3 = lost.expired(.failed, silence: nil, now: 2, connectTimeout: 15)
        #expect(e3)
        #expect(lost.reason(.failed, connectTimeout: 15).hasPrefix("its connection failed"))
        var slow = PeerHealth(created: 0)
        let e4 = slow.expired(.connecting, silence: nil, now: 15, connectTimeout: 15)
        #expect(!e4)
        let e5 = slow.expired(.connecting, silence: nil, now: 15.5, connectTimeout: 15)
        #expect(e5)
        #expect(slow.reason(.connecting, connectTimeout: 15).contains("did not connect within 15 s"))
    }

    @Test func theAnswerSaysWhatTheICEServersDidNotGive() {
        let turn = ICEConfiguration(turnServers: ["turn://1700000000:abc:secretish@turn.example.org:3478?transport=udp"])
        let host = "a=candidate:1 1 UDP 2015363327 192.168.1.2 47000 typ host\r\n"
        let relay = host + "a=candidate:2 1 UDP 8331263 203.0.113.1 49152 typ relay raddr 0.0.0.0 rport 0\r\n"
        let refused = WebRTCPeer.problems(answer: host, ice: turn, took: 0.05)
        #expect(refused.count == 1 && refused[0].contains("refused the allocation") && refused[0].contains("turn.example.org:3478"))
        #expect(!refused[0].contains("secretish"), "a TURN URL's password stays out of the log")
        let silent = WebRTCPeer.problems(answer: host, ice: turn, took: 2.0)
        #expect(silent.count == 1 && silent[0].contains("gave a relay (given up after 2.0 s): it did not answer, or it refused"))
        #expect(WebRTCPeer.problems(answer: relay, ice: turn, took: 0.05).isEmpty)
        let stun = ICEConfiguration(stunServer: "stun://stun.example.org:3478")
        #expect(WebRTCPeer.problems(answer: host, ice: stun, took: 2.0).first?.contains("STUN server") == true)
        #expect(WebRTCPeer.problems(answer: host, ice: stun, took: 0.05).isEmpty, "a public address needs no srflx")
        #expect(WebRTCPeer.problems(answer: host, ice: ICEConfiguration(), took: 2.0).isEmpty)
        // Both silent: each is said, not the first alone.
        let both = ICEConfiguration(stunServer: "stun://stun.example.org:3478", turnServers: turn.turnServers)
        let said = WebRTCPeer.problems(answer: host, ice: both, took: 2.0)
        #expect(said.count == 2 && said[0].contains("no TURN server") && said[1].contains("STUN server stun://stun.example.org:3478"))
    }
}

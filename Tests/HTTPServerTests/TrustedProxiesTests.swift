// Which address a request stands for behind a reverse proxy.

import Testing
@testable import HTTPServer

@Suite struct TrustedProxiesTests {
    @Test func rangesMatch() throws {
        let t = try TrustedProxies(["127.0.0.1", "10.0.0.0/8", "fd00::/8"])
        #expect(t.contains("127.0.0.1") && !t.contains("127.0.0.2"))
        #expect(t.contains("10.200.3.4") && !t.contains("11.0.0.1"))
        #expect(t.contains("fd12::1") && !t.contains("fe80::1") && !t.contains("nonsense"))
        #expect(t.contains(ipv4: UInt32(0x0A01_0203).bigEndian) && !t.contains(ipv4: UInt32(0x0B01_0203).bigEndian))
        #expect(throws: TrustedProxies.Problem(entry: "10.0.0.0/33")) { try TrustedProxies(["10.0.0.0/33"]) }
        #expect(throws: TrustedProxies.Problem(entry: "proxy.local")) { try TrustedProxies(["proxy.local"]) }
    }

    @Test func theClientIsTheRightmostHopNoTrustedProxyAdded() throws {
        let t = try TrustedProxies(["127.0.0.1", "10.0.0.0/8"])
        #expect(t.client(peer: "127.0.0.1", headers: ["x-forwarded-for": "203.0.113.7"]) == "203.0.113.7")
        #expect(t.client(peer: "127.0.0.1", headers: ["x-forwarded-for": "1.1.1.1, 203.0.113.7, 10.0.0.2"]) == "203.0.113.7")
        #expect(t.client(peer: "127.0.0.1", headers: ["forwarded": "for=192.0.2.60;proto=http, for=\"[2001:db8::1]:4711\""]) == "2001:db8::1")
        #expect(t.client(peer: "127.0.0.1", headers: ["forwarded": "for=192.0.2.60:8080"]) == "192.0.2.60")
        #expect(t.client(peer: "127.0.0.1", headers: ["x-forwarded-for": "garbage"]) == "127.0.0.1", "unparsable: the peer")
        #expect(t.client(peer: "127.0.0.1", headers: [:]) == "127.0.0.1")
        #expect(t.client(peer: "192.0.2.9", headers: ["x-forwarded-for": "203.0.113.7"]) == "192.0.2.9", "untrusted peer")
        #expect(t.client(peer: "127.0.0.1", headers: ["x-forwarded-for": "10.0.0.3, 10.0.0.2"]) == "10.0.0.3", "all trusted: the leftmost")
    }
}

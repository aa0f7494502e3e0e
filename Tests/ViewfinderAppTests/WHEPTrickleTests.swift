// Trickle ICE on a WHEP session (RFC 9725, section 4.3.1): the viewer's later candidates
// PATCHed to its Location as RFC 8840's trickle-ice-sdpfrag — 204 when taken; each bad or
// unusable fragment refused whole with its status, and the server serving on. That the
// candidates reach ICE and connect a viewer only they can reach is the NAT rig's
// (Tests/live/test_nat.py, "symmetric-trickled" beside "symmetric-withheld"); the page's trickle
// is the browser test's.

import CaptureTestSupport
import Foundation
@testable import Streaming
import Testing
@testable import ViewfinderApp

@Suite struct WHEPTrickleTests {
    static let host = "a=candidate:842163049 1 udp 1677729535 192.0.2.44 61764 typ srflx raddr 10.0.0.2 rport 61764 generation 0 ufrag 1ewz"

    /// A fragment as Chromium's candidates make one: the offer's credentials, its bundled mid.
    static func fragment(_ lines: [String], ufrag: String = "1ewz") -> String {
        (["a=ice-ufrag:\(ufrag)", "a=ice-pwd:2PfNtx3gzKFRJi1edivRyR31", "m=video 9 UDP/TLS/RTP/SAVPF 0", "a=mid:0"] + lines + [""])
            .joined(separator: "\r\n")
    }

    static func patch(_ port: Int, _ path: String, _ body: String, type: String = "application/trickle-ice-sdpfrag",
                      headers: [String: String] = [:]) async throws -> TestConnection {
        try await WHEPTests.send("PATCH", port, path, Array(body.utf8), type: type, headers: headers)
    }

    @Test func theViewersLaterCandidatesAreTaken() async throws {
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try await WHEPTests.post(port, "/api/whep", WHEPTests.offer)
            #expect(c.status == 201, "\(c.text)")
            let location = try #require(c.headers["location"]), etag = try #require(c.headers["etag"])
            #expect(c.headers["accept-patch"] == "application/trickle-ice-sdpfrag")
            let taken = try await Self.patch(port, location, Self.fragment([Self.host]), headers: ["If-Match": etag])
            #expect(taken.status == 204 && taken.body.isEmpty, "\(taken.status) \(taken.text)")
            // Without If-Match, and the end of the viewer's candidates.
            #expect(try await Self.patch(port, location, Self.fragment(["a=end-of-candidates"])).status == 204)
            // After the end, more still (a browser gathers again when its network changes).
            let late = try await Self.patch(port, location, Self.fragment([Self.host]))
            #expect(late.status == 204, "\(late.text)")
            // If-Match as a list naming the session's tag, and `*` with the session's own credentials.
            #expect(try await Self.patch(port, location, Self.fragment([Self.host]), headers: ["If-Match": "\"old\", \(etag)"]).status == 204)
            #expect(try await Self.patch(port, location, Self.fragment([Self.host]), headers: ["If-Match": "*"]).status == 204)
            #expect(app.whep.count == 1)
        }
    }

    @Test func badFragmentsAreRefusedAndChangeNothing() async throws {
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try await WHEPTests.post(port, "/api/whep", WHEPTests.offer)
            let location = try #require(c.headers["location"]), etag = try #require(c.headers["etag"])
            func refused(_ body: String, type: String = "application/trickle-ice-sdpfrag", headers: [String: String] = [:])
                async throws -> (Int, String?, String) {
                let r = try await Self.patch(port, location, body, type: type, headers: headers)
                return (r.status, WHEPTests.code(r), r.text)
            }
            var r = try await refused(Self.fragment([Self.host]), type: "application/sdp")
            #expect(r.0 == 415 && r.1 == "unsupported_media_type", "\(r)")
            r = try await refused("")
            #expect(r.0 == 400 && r.1 == "invalid_sdpfrag", "\(r)")
            r = try await refused(Self.fragment(["a=candidate:1 1 udp 100 192.0.2.1 99999 typ host"]))
            #expect(r.0 == 400 && r.1 == "invalid_sdpfrag" && r.2.contains("Line 5") && r.2.contains("port"), "\(r)")
            r = try await refused(Self.fragment(["a=candidate:1 1 sctp 100 192.0.2.1 9 typ host"]))
            #expect(r.0 == 400 && r.2.contains("transport"), "\(r)")
            r = try await refused(Self.fragment(["v=0"]))
            #expect(r.0 == 400 && r.2.contains("only a= and m= lines"), "\(r)")
            r = try await refused(Self.fragment(Array(repeating: Self.host, count: ICEFragment.maxCandidates + 1)))
            #expect(r.0 == 400 && r.2.contains("at most \(ICEFragment.maxCandidates)"), "\(r)")
            r = try await refused(Self.fragment([String(repeating: "a=ice-options:trickle\r\n", count: 800)]))
            #expect(r.0 == 413 && r.1 == "body_too_large", "\(r)")
            let bytes = try await WHEPTests.send("PATCH", port, location, [0x61, 0x3D, 0xFF, 0xFE, 0x0D, 0x0A], type: "application/trickle-ice-sdpfrag")
            #expect(bytes.status == 400 && bytes.text.contains("not UTF-8"), "\(bytes.text)")
            r = try await refused(Self.fragment([Self.host, "a=end-of-candidates", Self.host]))
            #expect(r.0 == 400 && r.2.contains("after a=end-of-candidates"), "\(r)")
            // Another ICE session's credentials; a mid the offer has not.
            r = try await refused(Self.fragment([Self.host], ufrag: "zzzz"))
            #expect(r.0 == 422 && r.1 == "unusable_candidates" && r.2.contains("zzzz"), "\(r)")
            r = try await refused(Self.fragment([Self.host]).replacingOccurrences(of: "a=mid:0", with: "a=mid:7"))
            #expect(r.0 == 422 && r.2.contains("mid '7'"), "\(r)")
            // If-Match naming another ICE session (412, the session's ETag told); an ICE restart.
            let other = try await Self.patch(port, location, Self.fragment([Self.host]), headers: ["If-Match": "\"elsewhere\""])
            #expect(other.status == 412 && other.headers["etag"] == etag, "\(other.status) \(other.text)")
            r = try await refused(Self.fragment([Self.host], ufrag: "n3wU"), headers: ["If-Match": "*"])
            #expect(r.0 == 422 && r.1 == "ice_restart_unsupported", "\(r)")
            // An unknown session, an ended one.
            r = try await refused(Self.fragment([Self.host]), headers: [:])
            #expect(r.0 == 204, "the good fragment after all the bad ones: \(r)")
            let unknown = try await Self.patch(port, "/api/whep/nowhere", Self.fragment([Self.host]))
            #expect(unknown.status == 404 && WHEPTests.code(unknown) == "not_found")
            #expect(try await fetch(port, "DELETE", location).status == 200)
            let ended = try await Self.patch(port, location, Self.fragment([Self.host]))
            #expect(ended.status == 404, "\(ended.text)")
            #expect(app.whep.count == 0)
            #expect(try await WHEPTests.post(port, "/api/whep", WHEPTests.offer).status == 201, "the server serves on")
        }
    }

    /// Mutated fragments (a fixed seed; bytes flipped, lines dropped, doubled and cut): each is
    /// taken (204) or refused with a 4xx naming why, never a 5xx, and the server serves on.
    @Test func mutatedFragmentsAreTakenOrRefusedNeverAFault() async throws {
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try await WHEPTests.post(port, "/api/whep", WHEPTests.offer)
            let location = try #require(c.headers["location"])
            var random = SplitMix(seed: 20261207)
            let base = Array(Self.fragment([Self.host, "a=candidate:1 1 TCP 2105524479 192.0.2.3 9 typ host tcptype active"]).utf8)
            var statuses: [Int: Int] = [:]
            for _ in 0..<300 {
                var bytes = base
                switch random.next() % 4 {
                case 0:  // bytes flipped
                    for _ in 0..<(1 + Int(random.next() % 4)) { bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next()) }
                case 1:  // cut short
                    bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count))))
                case 2:  // a line dropped or doubled
                    var lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
                    let i = Int(random.next() % UInt64(lines.count))
                    if random.next() % 2 == 0 { lines.remove(at: i) } else { lines.insert(lines[i], at: i) }
                    bytes = Array(lines.joined(separator: "\r\n").utf8)
                default:  // a field of the candidate replaced
                    var text = String(decoding: bytes, as: UTF8.self)
                    let odd = ["", "-1", "99999999999", "typ", "relay", "::1", "a=b", "\u{0}", String(repeating: "x", count: 300)]
                    let fields = ["842163049", "1677729535", "192.0.2.44", "61764", "srflx", "udp"]
                    text = text.replacingOccurrences(of: fields[Int(random.next() % UInt64(fields.count))], with: odd[Int(random.next() % UInt64(odd.count))])
                    bytes = Array(text.utf8)
                }
                let r = try await WHEPTests.send("PATCH", port, location, bytes, type: "application/trickle-ice-sdpfrag")
                statuses[r.status, default: 0] += 1
                #expect([204, 400, 422].contains(r.status), "\(r.status) \(r.text) for \(String(decoding: bytes, as: UTF8.self).debugDescription)")
            }
            #expect((statuses[400] ?? 0) > 0 && (statuses[204] ?? 0) > 0, "\(statuses)")
            #expect(app.whep.count == 1)
            #expect(try await Self.patch(port, location, Self.fragment([Self.host])).status == 204, "the session takes candidates still")
        }
    }

    @Test func aFragmentIsReadAsRFC8840Has() throws {
        let f = try ICEFragment(parsing: Self.fragment([Self.host, "a=candidate:1 1 TCP 2105524479 192.0.2.3 9 typ host tcptype active",
                                                        "a=end-of-candidates"]))
        #expect(f.ufrag == "1ewz" && f.password == "2PfNtx3gzKFRJi1edivRyR31" && f.endOfCandidates)
        #expect(f.candidates.map(\.mid) == ["0", "0"])
        #expect(f.candidates.first?.line == String(Self.host.dropFirst(2)))
        // Candidates before any m= line have no mid (the session's first media line takes them).
        let bare = try ICEFragment(parsing: Self.host + "\n")
        #expect(bare.candidates.count == 1 && bare.candidates[0].mid == nil && bare.ufrag == nil)
        #expect(throws: ICEFragmentError.empty) { try ICEFragment(parsing: "\r\n\r\n") }
        #expect(throws: ICEFragmentError.self) { try ICEFragment(parsing: "a=ice-ufrag:ab\r\n") }  // under 4 characters
        #expect(throws: ICEFragmentError.self) { try ICEFragment(parsing: Self.host + "\na=ice-ufrag:1ewz\na=ice-ufrag:other\n") }
    }

    /// Where a candidate goes: the bundle's line for every mid of an offer that bundles (one ICE
    /// stream in webrtcbin), else the mid's own.
    @Test func candidatesGoToTheBundlesLine() {
        let bundled = OfferedICE(WHEPTests.offerWithSound)
        #expect(bundled.ufrag == "1ewz" && bundled.mediaLine(for: "1") == 0 && bundled.mediaLine(for: "0") == 0 && bundled.mediaLine(for: nil) == 0)
        #expect(bundled.mediaLine(for: "9") == nil)
        let apart = OfferedICE(WHEPTests.offerWithSound.replacingOccurrences(of: "a=group:BUNDLE 0 1\r\n", with: ""))
        #expect(apart.mediaLine(for: "1") == 1 && apart.mediaLine(for: "0") == 0)
    }
}

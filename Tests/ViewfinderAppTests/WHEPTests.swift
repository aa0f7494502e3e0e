// WHEP (`POST /api/whep`, `POST /api/cameras/{id}/whep`, `DELETE` its Location) with an
// offer Chromium made (Fixtures/chromium-offer.sdp: recvonly video, H.264 among its codecs):
// the answer webrtcbin makes, and each bad input refused with its status and nothing left
// behind. Chromium connecting and playing is the browser test's (Tests/browser). The
// fixture's candidates are on TEST-NET addresses nothing answers: libnice fails such checks
// within seconds, and under ThreadSanitizer a test can take longer than that to look at its
// session (it was swept as failed). So the offer is sent without them — ICE then waits for
// candidates that never come — and each test gives its peers longer to connect than it runs
// (they would be swept after 15 s otherwise).

import CaptureTestSupport
import Foundation
import Glibc
import SystemSupport
import Testing
@testable import ViewfinderApp

@Suite struct WHEPTests {
    static let offer = ((try? String(contentsOfFile: packageRoot + "/Tests/ViewfinderAppTests/Fixtures/chromium-offer.sdp", encoding: .utf8)) ?? "")
        .split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("a=candidate:") }.joined(separator: "\r\n")

    /// The offer with only the payload types `keep` (and their attributes).
    static func offer(keeping keep: Set<String>) -> String {
        offer.split(separator: "\r\n", omittingEmptySubsequences: false).compactMap { line -> String? in
            if line.hasPrefix("m=video") {
                let f = line.split(separator: " ")
                return (f.prefix(3) + f.dropFirst(3).filter { keep.contains(String($0)) }).joined(separator: " ")
            }
            for prefix in ["a=rtpmap:", "a=fmtp:", "a=rtcp-fb:"] where line.hasPrefix(prefix) {
                let pt = line.dropFirst(prefix.count).prefix { $0 != " " }
                return keep.contains(String(pt)) ? String(line) : nil
            }
            return String(line)
        }.joined(separator: "\r\n")
    }

    /// The offer with a second section receiving Opus (as Chromium offers with
    /// `addTransceiver("audio", {direction: "recvonly"})`), bundled with the video.
    static var offerWithSound: String {
        let lines = offer.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        func value(_ prefix: String) -> String { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } ?? "" }
        let audio = ["m=audio 9 UDP/TLS/RTP/SAVPF 111 0", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0",
                     "a=ice-ufrag:" + value("a=ice-ufrag:"), "a=ice-pwd:" + value("a=ice-pwd:"), "a=ice-options:trickle",
                     "a=fingerprint:" + value("a=fingerprint:"), "a=setup:actpass", "a=mid:1", "a=recvonly", "a=rtcp-mux",
                     "a=rtpmap:111 opus/48000/2", "a=rtcp-fb:111 transport-cc", "a=fmtp:111 minptime=10;useinbandfec=1",
                     "a=rtpmap:0 PCMU/8000"]
        var out = lines.map { $0 == "a=group:BUNDLE 0" ? "a=group:BUNDLE 0 1" : $0 }
        if out.last == "" { out.removeLast() }
        return (out + audio + [""]).joined(separator: "\r\n")
    }

    static func post(_ port: Int, _ path: String, _ sdp: String, type: String = "application/sdp",
                     headers: [String: String] = [:]) async throws -> TestConnection {
        try await send("POST", port, path, Array(sdp.utf8), type: type, headers: headers)
    }

    /// `body` as `type` (a WHEP offer, a trickled fragment), read whole.
    static func send(_ method: String, _ port: Int, _ path: String, _ body: [UInt8], type: String,
                     headers: [String: String] = [:]) async throws -> TestConnection {
        try await offload {
            let c = try TestConnection(port: port)
            try c.request(method, path, headers: headers.merging(["Content-Type": type, "Connection": "close"]) { a, _ in a }, body: body)
            try c.readAllSync(timeout: 15)
            return c
        }
    }

    static func code(_ c: TestConnection) -> String? { (c.json as? [String: Any])?["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } }

    @Test func anOfferGetsAnAnswerWithH264AndALocationToDelete() async throws {
        #expect(!Self.offer.isEmpty)
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try await Self.post(port, "/api/cameras/rear/whep", Self.offer)
            #expect(c.status == 201, "\(c.status) \(c.text)")
            #expect(c.headers["content-type"] == "application/sdp")
            let answer = c.text
            #expect(answer.hasPrefix("v=0"))
            // H.264 in packetization-mode 1 at one of the offer's payload types, sending only,
            // DTLS-SRTP (a fingerprint), and host candidates in the answer itself (no trickle).
            let rtpmap = try #require(answer.split(separator: "\r\n").first { $0.hasPrefix("a=rtpmap:") && $0.contains("H264/90000") })
            let pt = rtpmap.dropFirst("a=rtpmap:".count).prefix { $0 != " " }
            #expect(Self.offer.contains("a=rtpmap:\(pt) H264/90000"))
            #expect(answer.contains("a=fmtp:\(pt) ") && answer.contains("packetization-mode=1"))
            #expect(answer.contains("a=sendonly"))
            #expect(answer.contains("a=fingerprint:sha-256"))
            #expect(answer.contains("a=candidate:") && answer.contains(" 127.0.0.1 "), "host candidates where HTTP listens")
            let location = try #require(c.headers["location"])
            #expect(location.hasPrefix("/api/whep/"))
            #expect(app.whep.count == 1)
            #expect(try await fetch(port, "DELETE", location).status == 200)
            #expect(app.whep.count == 0)
            let again = try await fetch(port, "DELETE", location)
            #expect(again.status == 404 && Self.code(again) == "not_found")
        }
    }

    /// The page asks which STUN and TURN servers to use before it offers: a TURN credential
    /// minted for it (lapsing after webrtc.turn.ttl), never the shared secret.
    @Test func thePageIsHandedAMintedTURNCredential() async throws {
        try await withServer({ $0.webrtc.turn = .init(urls: ["turn:127.0.0.1:3478"], secret: "do-not-hand-out", ttl: 600) }) { _, port in
            let c = try await fetch(port, "/api/webrtc/ice-servers")
            #expect(c.status == 200 && c.headers["cache-control"]?.contains("no-store") == true, "\(c.status) \(c.text)")
            #expect(!c.text.contains("do-not-hand-out"))
            let servers = try #require((c.json as? [String: Any])?["iceServers"] as? [[String: Any]])
            let turn = try #require(servers.first)
            #expect(turn["urls"] as? [String] == ["turn:127.0.0.1:3478"])
            let user = try #require(turn["username"] as? String)
            let expiry = try #require(user.split(separator: ":").first.flatMap { Double($0) })
            #expect(abs(expiry - Date().timeIntervalSince1970 - 600) < 60 && user.hasSuffix(":viewer"), "\(user)")
            #expect((turn["credential"] as? String)?.count == 28, "base64 of an HMAC-SHA1")
        }
        // Nothing configured: nothing handed (the LAN's host candidates do).
        try await withServer { _, port in
            let c = try await fetch(port, "/api/webrtc/ice-servers")
            #expect(c.status == 200 && ((c.json as? [String: Any])?["iceServers"] as? [Any])?.isEmpty == true, "\(c.text)")
        }
    }

    /// An offer without H.264 (Firefox without its OpenH264 download offers VP8, VP9 and AV1)
    /// is answered with VP8 at its payload type: the viewer takes the camera's VP8 rendition,
    /// which the state lists (encoder libvpx) with its client while it watches, pinned (not
    /// adaptive: there is one). Firefox playing it is Tests/browser/test_browsers.py's.
    @Test func anOfferWithoutH264GetsVP8() async throws {
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try await Self.post(port, "/api/whep", Self.offer(keeping: ["96", "97", "98", "99"]))
            #expect(c.status == 201, "\(c.status) \(c.text)")
            let answer = c.text
            #expect(answer.contains("a=rtpmap:96 VP8/90000") && !answer.contains("H264") && !answer.contains("VP9"), "\(answer)")
            #expect(answer.contains("a=sendonly"))
            let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            let live = try #require(state["live"] as? [[String: Any]])
            let vp8 = try #require(live.first { $0["name"] as? String == "vp8" }, "\(live)")
            #expect(vp8["encoder"] as? String == "libvpx" && vp8["width"] as? Int == 352)
            let outputs = try #require(state["outputs"] as? [[String: Any]])
            #expect((outputs.first { $0["type"] as? String == "liveVP8" }?["clients"] as? [String: Int])?["webrtc"] == 1, "\(outputs)")
            #expect((outputs.first { $0["type"] as? String == "liveSub" }?["clients"] as? [String: Int])?["webrtc"] ?? 0 == 0)
            if let location = c.headers["location"] { _ = try await fetch(port, "DELETE", location) }
            let after = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect((after["live"] as? [[String: Any]])?.map { $0["name"] as? String } == ["main", "sub"], "listed while watched only")
        }
    }

    /// Where the offer has libwebrtc's playout-delay header extension (Chromium's does), the
    /// answer takes it at the offer's id and every packet asks for the frame at once (minimum and
    /// maximum delay 0): Chromium then shows a frame as soon as it is decoded — 1080p30 went from
    /// p50 96 ms to 40–65 ms glass to glass (bench/RESULTS.md). An offer without it gets none.
    @Test func theAnswerAsksForEachFrameAtOnceWhereTheOfferCan() async throws {
        let uri = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"
        #expect(Self.offer.contains("a=extmap:5 \(uri)"))
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            for (offer, kind) in [(Self.offer, "H.264"), (Self.offer(keeping: ["96", "97"]), "VP8")] {
                let c = try await Self.post(port, "/api/whep", offer)
                #expect(c.status == 201, "\(kind): \(c.status) \(c.text)")
                #expect(c.text.contains("a=extmap:5 \(uri)\r\n"), "\(kind): \(c.text)")
                if let location = c.headers["location"] { _ = try await fetch(port, "DELETE", location) }
            }
            let without = Self.offer.replacingOccurrences(of: "a=extmap:5 \(uri)\r\n", with: "")
            let c = try await Self.post(port, "/api/whep", without)
            #expect(c.status == 201 && !c.text.contains("playout-delay"), "\(c.text)")
            if let location = c.headers["location"] { _ = try await fetch(port, "DELETE", location) }
        }
    }

    /// A packet the viewer lost is sent again when it asks (RTCP NACK, RFC 4585), in RFC 4588's
    /// retransmission stream (`rtx`, its own SSRC), where the offer has one for the codec chosen
    /// (every browser's does): a keyframe's burst that overflowed a router's shallow queue is
    /// repaired in a round trip instead of freezing the picture until the next keyframe
    /// (1080p30 on a 20 Mbit/s link with a 20 ms queue: 13 → 30 frames/s, bench/RESULTS.md). An
    /// offer without `rtx` gets no retransmission stream.
    @Test func lostPacketsAreSentAgainWhereTheOfferCan() async throws {
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            for (offer, kind, pt, rtx) in [(Self.offer, "H.264", "102", "103"), (Self.offer(keeping: ["96", "97"]), "VP8", "96", "97")] {
                let c = try await Self.post(port, "/api/whep", offer)
                #expect(c.status == 201, "\(kind): \(c.status) \(c.text)")
                #expect(c.text.contains("a=rtcp-fb:\(pt) nack\r\n") && c.text.contains("a=rtpmap:\(rtx) rtx/90000\r\n")
                        && c.text.contains("a=fmtp:\(rtx) apt=\(pt)\r\n") && c.text.contains("a=ssrc-group:FID "), "\(kind): \(c.text)")
                if let location = c.headers["location"] { _ = try await fetch(port, "DELETE", location) }
            }
            let c = try await Self.post(port, "/api/whep", Self.offer(keeping: ["96"]))
            #expect(c.status == 201 && !c.text.contains("rtx/90000") && !c.text.contains("ssrc-group:FID"), "\(c.text)")
            if let location = c.headers["location"] { _ = try await fetch(port, "DELETE", location) }
        }
    }

    /// One encode serves every viewer, so its H.264 profile follows the offers: while a viewer
    /// whose offer has Constrained Baseline alone (Firefox's OpenH264) takes the main stream,
    /// the stream is encoded so — a live.mp4 client joining then gets Constrained Baseline, the
    /// state says so — and once it leaves, Main again.
    @Test func theProfileFollowsWhatTheOffersAccept() async throws {
        func mainProfile(_ port: Int) async throws -> String? {
            let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            return (state["live"] as? [[String: Any]])?.first { $0["name"] as? String == "main" }?["profile"] as? String
        }
        func streamProfile(_ port: Int) async throws -> String {
            let c = try TestConnection(port: port)
            try c.request("GET", "/live.mp4?audio=0")
            let path = try await LiveMP4Tests.record(c, fragments: 5)
            defer { unlink(path) }
            return try await LiveMP4Tests.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=profile",
                                                              "-of", "csv=p=0", path]).out.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            #expect(try await mainProfile(port) == "main")
            let c = try await Self.post(port, "/api/whep?stream=main", Self.offer(keeping: ["102", "103", "108", "109"]))
            #expect(c.status == 201, "\(c.text)")
            #expect(c.text.contains("a=rtpmap:102 H264") || c.text.contains("a=rtpmap:108 H264"), "one of the offer's Baseline formats")
            #expect(try await mainProfile(port) == "constrainedBaseline")
            #expect(try await streamProfile(port) == "Constrained Baseline")
            if let location = c.headers["location"] { _ = try await fetch(port, "DELETE", location) }
            #expect(try await mainProfile(port) == "main")
            #expect(try await eventually(timeout: TestTime.patience) { try await streamProfile(port) == "Main" })
        }
    }

    /// A camera with a microphone answers an offer that receives Opus with a sending audio
    /// section in Opus at the offer's payload type, bundled with the picture; a mute camera
    /// answers the same offer with its audio section refused, and the picture as ever.
    @Test func anOfferThatReceivesOpusGetsTheMicrophone() async throws {
        try await withServer({ $0.synthetic.microphone = true }) { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try await Self.post(port, "/api/cameras/rear/whep", Self.offerWithSound)
            #expect(c.status == 201, "\(c.status) \(c.text)")
            let sections = c.text.components(separatedBy: "\r\nm=")
            let audio = try #require(sections.first { $0.hasPrefix("audio") }, "an audio section: \(c.text)")
            #expect(!audio.hasPrefix("audio 0 "), "accepted: \(audio)")
            #expect(audio.contains("a=rtpmap:111 OPUS/48000/2") || audio.contains("a=rtpmap:111 opus/48000/2"), "\(audio)")
            #expect(audio.contains("a=sendonly") && audio.contains("a=mid:1"), "\(audio)")
            #expect(c.text.contains("a=group:BUNDLE 0 1"), "\(c.text)")
            #expect(sections.first { $0.hasPrefix("video") }?.contains("a=sendonly") == true)
        }
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try await Self.post(port, "/api/cameras/rear/whep", Self.offerWithSound)
            #expect(c.status == 201, "\(c.status) \(c.text)")
            let audio = c.text.components(separatedBy: "\r\nm=").first { $0.hasPrefix("audio") }
            #expect(audio == nil || audio!.hasPrefix("audio 0 ") || audio!.contains("a=inactive"), "no sound to send: \(audio ?? "")")
        }
    }

    @Test func badOffersAreRefusedAndLeaveNothing() async throws {
        try await withServer { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let json = try await Self.post(port, "/api/whep", #"{"sdp": "v=0"}"#, type: "application/json")
            #expect(json.status == 415 && Self.code(json) == "unsupported_media_type", "\(json.text)")
            let garbage = try await Self.post(port, "/api/whep", "hello")
            #expect(garbage.status == 400 && Self.code(garbage) == "invalid_sdp", "\(garbage.text)")
            let empty = try await Self.post(port, "/api/whep", "")
            #expect(empty.status == 400 && Self.code(empty) == "invalid_sdp", "\(empty.text)")
            let vp9 = try await Self.post(port, "/api/whep", Self.offer(keeping: ["98", "99"]))
            #expect(vp9.status == 422 && Self.code(vp9) == "unsupported_codec", "\(vp9.text)")
            // packetization-mode 0 only (single NAL units) cannot carry the encoder's slices.
            let mode0 = try await Self.post(port, "/api/whep", Self.offer(keeping: ["104", "114"]))
            #expect(mode0.status == 422, "\(mode0.text)")
            let unknown = try await Self.post(port, "/api/cameras/nowhere/whep", Self.offer)
            #expect(unknown.status == 404, "\(unknown.text)")
            #expect(app.whep.count == 0)
            // The server serves on: a good offer still gets its answer.
            #expect(try await Self.post(port, "/api/whep", Self.offer).status == 201)
        }
    }

    /// Two ports on 127.0.0.1 free for UDP and TCP alike, one after the other.
    static func freePortPair() throws -> ClosedRange<Int> {
        func free(_ port: Int, _ type: Int32) -> Bool {
            let fd = socket(AF_INET, type, 0)
            defer { close(fd) }
            return (try? IPv4SocketAddress.loopback(port: UInt16(port)).bind(fd)) != nil
        }
        for _ in 0..<100 {
            let p = Int.random(in: 42_000...58_000)
            if [p, p + 1].allSatisfy({ free($0, Int32(SOCK_DGRAM.rawValue)) && free($0, Int32(SOCK_STREAM.rawValue)) }) { return p...(p + 1) }
        }
        struct NoFreePorts: Error {}
        throw NoFreePorts()  // in 100 tries
    }

    /// webrtc.udpPorts: each peer's ICE takes a port of the range (the answer's candidates are
    /// there), one a peer; with every one held the next offer is a clear 503, and a port comes
    /// free with its peer.
    @Test func peersTakeTheirPortsFromTheConfiguredRange() async throws {
        let ports = try Self.freePortPair()
        try await withServer({ $0.webrtc.udpPorts = ports }) { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            var locations: [String] = []
            var taken: Set<Int> = []
            for _ in ports {
                let c = try await Self.post(port, "/api/whep", Self.offer)
                #expect(c.status == 201, "\(c.status) \(c.text)")
                let candidates = c.text.split(separator: "\r\n").filter { $0.hasPrefix("a=candidate:") && $0.contains(" UDP ") }
                // a=candidate:<foundation> <component> UDP <priority> <address> <port> typ host
                let used = Set(candidates.compactMap { line in Int(line.split(separator: " ")[5]) })
                #expect(!used.isEmpty && used.isSubset(of: Set(ports)), "\(candidates)")
                taken.formUnion(used)
                if let l = c.headers["location"] { locations.append(l) }
            }
            #expect(taken == Set(ports), "one port a peer: \(taken)")
            let full = try await Self.post(port, "/api/whep", Self.offer)
            #expect(full.status == 503 && Self.code(full) == "no_free_port" && full.headers["retry-after"] != nil, "\(full.status) \(full.text)")
            #expect(app.whep.count == 2, "the refused offer left no peer")
            #expect(try await fetch(port, "DELETE", locations[0]).status == 200)
            let again = try await Self.post(port, "/api/whep", Self.offer)
            #expect(again.status == 201, "a port came free with its peer: \(again.status) \(again.text)")
        }
    }

    /// webrtc.publicAddresses: beside each host candidate the peer gathered, the router's address
    /// on the same port and transport (UDP, and passive ICE-TCP: libnice takes its TCP port from
    /// the range too), ranked below it; an IPv6 one only beside IPv6 candidates.
    @Test func theAnswerOffersThePublicAddressesOnThePeersPorts() async throws {
        let ports = try Self.freePortPair()
        try await withServer({ $0.webrtc.udpPorts = ports; $0.webrtc.publicAddresses = ["192.0.2.10", "2001:db8::7"] }) { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try await Self.post(port, "/api/whep", Self.offer)
            #expect(c.status == 201, "\(c.text)")
            // a=candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type> …
            let candidates = c.text.split(separator: "\r\n").filter { $0.hasPrefix("a=candidate:") }.map { $0.split(separator: " ").map(String.init) }
            let local = candidates.filter { $0[4] == "127.0.0.1" && $0[7] == "host" && !$0.contains("active") }, outside = candidates.filter { $0[4] == "192.0.2.10" }
            #expect(!local.isEmpty && local.allSatisfy { ports.contains(Int($0[5]) ?? 0) }, "\(candidates)")
            #expect(Set(outside.map { "\($0[1]) \($0[2]) \($0[5])" }) == Set(local.map { "\($0[1]) \($0[2]) \($0[5])" }), "\(candidates)")
            #expect(outside.allSatisfy { o in o[7] == "host" && local.contains { $0[5] == o[5] && UInt32($0[3])! > UInt32(o[3])! } })
            #expect(!c.text.contains("2001:db8::7"), "no IPv6 host candidate to stand beside")
        }
    }

    @Test func liveMaxClientsCountsEveryKindOfLiveClient() async throws {
        try await withServer({ $0.live.maxClients = 2 }) { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            // Two live.mp4 streams fill it (a WHEP peer nothing answers may fail its ICE checks
            // and be swept before the count is looked at; a stream stays while it is read).
            var streams: [TestConnection] = []
            for _ in 0..<2 {
                let mp4 = try TestConnection(port: port)
                try mp4.request("GET", "/live.mp4")
                try await mp4.readHead()
                #expect(mp4.status == 200)
                streams.append(mp4)
            }
            #expect(app.liveClientCount == 2)
            let whep = try await Self.post(port, "/api/whep", Self.offer)
            #expect(whep.status == 503 && Self.code(whep) == "too_many_clients" && whep.headers["retry-after"] != nil, "\(whep.text)")
            let mp4Again = try await fetch(port, "/live.mp4")
            #expect(mp4Again.status == 503)
            #expect(app.whep.count == 0, "a refused offer leaves no peer")
            withExtendedLifetime(streams) {}
        }
    }

    @Test func aViewerMayWatchButNeedsToSignIn() async throws {
        let accounts = try AuthLiveTests.accounts()
        try await withServer({ $0.auth = accounts }) { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            let anon = try await Self.post(port, "/api/whep", Self.offer)
            #expect(anon.status == 401)
            let viewer = ["Authorization": "Basic " + Data("vic:viewer pw".utf8).base64EncodedString()]
            _ = try await fetch(port, "POST", "/api/session/start", headers: ["Authorization": "Basic " + Data("ann:pass word".utf8).base64EncodedString()])
            let c = try await Self.post(port, "/api/whep", Self.offer, headers: viewer)
            #expect(c.status == 201, "\(c.status) \(c.text)")
            let location = try #require(c.headers["location"])
            // Trickling its candidates is watching too; not without signing in.
            let fragment = WHEPTrickleTests.fragment([WHEPTrickleTests.host])
            #expect(try await WHEPTrickleTests.patch(port, location, fragment).status == 401)
            #expect(try await WHEPTrickleTests.patch(port, location, fragment, headers: viewer).status == 204)
            #expect(try await fetch(port, "DELETE", location, headers: viewer).status == 200)
        }
    }
}

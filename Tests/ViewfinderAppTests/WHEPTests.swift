// WHEP (`POST /api/whep`, `POST /api/cameras/{id}/whep`, `DELETE` its Location) with an
// offer Chromium made (Fixtures/chromium-offer.sdp: recvonly video, H.264 among its codecs):
// the answer webrtcbin makes, and each bad input refused with its status and nothing left
// behind. Chromium connecting and playing is the browser test's (Tests/browser). The
// fixture's candidates are on TEST-NET addresses nothing answers: libnice fails such checks
// within seconds, and under ThreadSanitizer a test can take longer than that to look at its
// session (it was swept as failed). So the offer is sent without them — ICE then waits for
// candidates that never come — and each test gives its peers longer to connect than it runs
// (they would be swept after 15 s otherwise).

import Foundation
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

    static func post(_ port: Int, _ path: String, _ sdp: String, type: String = "application/sdp",
                     headers: [String: String] = [:]) async throws -> TestConnection {
        try await offload {
            let c = try TestConnection(port: port)
            try c.request("POST", path, headers: headers.merging(["Content-Type": type, "Connection": "close"]) { a, _ in a },
                          body: Array(sdp.utf8))
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
            let vp8 = try await Self.post(port, "/api/whep", Self.offer(keeping: ["96", "97"]))
            #expect(vp8.status == 422 && Self.code(vp8) == "unsupported_codec", "\(vp8.text)")
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
            #expect(try await fetch(port, "DELETE", location, headers: viewer).status == 200)
        }
    }
}

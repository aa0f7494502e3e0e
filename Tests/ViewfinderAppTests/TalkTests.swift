// Talk-back by WHIP (issue 37): `POST /api/cameras/{id}/talk` with an offer that sends Opus
// gets a receiving answer and a Location; one talker a camera (409 `talk_busy`); what cannot
// be a talk is refused with its status and leaves nothing — no talk, the speaker free.
// Chromium talking through the page and the synthetic speaker playing it back is the
// browser test's (Tests/browser, TalkTest).

import CaptureTestSupport
import Foundation
import Testing
@testable import ViewfinderApp

@Suite struct TalkTests {
    /// An offer with one audio section sending Opus (`direction`), as a browser makes with
    /// `addTransceiver(micTrack, {direction: "sendonly"})`, on the fixture's ICE and DTLS.
    static func offer(direction: String = "sendonly", codec: String = "opus/48000/2") -> String {
        let lines = WHEPTests.offer.split(separator: "\r\n").map(String.init)
        func value(_ prefix: String) -> String { lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } ?? "" }
        return (["v=0", "o=- 4611731400430051336 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0", "a=msid-semantic: WMS",
                 "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0",
                 "a=ice-ufrag:" + value("a=ice-ufrag:"), "a=ice-pwd:" + value("a=ice-pwd:"), "a=ice-options:trickle",
                 "a=fingerprint:" + value("a=fingerprint:"), "a=setup:actpass", "a=mid:0", "a=\(direction)", "a=rtcp-mux",
                 "a=rtpmap:111 \(codec)", "a=fmtp:111 minptime=10;useinbandfec=1", ""]).joined(separator: "\r\n")
    }

    static func speaker(_ port: Int, _ camera: String = "rear") async throws -> [String: Any]? {
        let list = try #require(try await fetch(port, "/api/cameras").json as? [String: Any])
        let cameras = try #require(list["cameras"] as? [[String: Any]])
        return cameras.first { $0["id"] as? String == camera }?["speaker"] as? [String: Any]
    }

    @Test func anOfferThatSendsOpusTalksAndASecondTalkerWaits() async throws {
        try await withServer { app, port in
            app.talk.connectTimeout.withLock { $0 = 600 }
            #expect(try await Self.speaker(port)?["device"] as? String == "synthetic")
            #expect(try await Self.speaker(port)?["talking"] as? Bool == false)
            let c = try await WHEPTests.post(port, "/api/cameras/rear/talk", Self.offer())
            #expect(c.status == 201, "\(c.status) \(c.text)")
            #expect(c.headers["content-type"] == "application/sdp")
            #expect(c.text.contains("a=rtpmap:111 OPUS/48000/2") || c.text.contains("a=rtpmap:111 opus/48000/2"), "\(c.text)")
            #expect(c.text.contains("a=recvonly"), "the server only listens: \(c.text)")
            #expect(c.text.contains("a=candidate:") && c.text.contains("a=fingerprint:sha-256"))
            let location = try #require(c.headers["location"])
            #expect(location.hasPrefix("/api/talk/"))
            #expect(try await Self.speaker(port)?["talking"] as? Bool == true)
            // One talker a camera; the main camera's route is the same camera's.
            let second = try await WHEPTests.post(port, "/api/talk", Self.offer())
            #expect(second.status == 409 && WHEPTests.code(second) == "talk_busy", "\(second.text)")
            #expect(app.talk.count == 1)
            #expect(try await fetch(port, "DELETE", location).status == 200)
            #expect(try await Self.speaker(port)?["talking"] as? Bool == false)
            let again = try await fetch(port, "DELETE", location)
            #expect(again.status == 404 && WHEPTests.code(again) == "not_found")
            // Free again: the next talker is answered.
            let next = try await WHEPTests.post(port, "/api/talk", Self.offer(direction: "sendrecv"))
            #expect(next.status == 201, "\(next.text)")
        }
    }

    @Test func whatCannotBeATalkIsRefusedAndLeavesNothing() async throws {
        try await withServer({
            $0.cameras = .list([.init(id: "rear", source: .synthetic, position: "rear"),
                                .init(id: "mute", source: .synthetic, position: "front", speaker: Configuration.AudioSource.none)])
        }) { app, port in
            app.talk.connectTimeout.withLock { $0 = 600 }
            let json = try await WHEPTests.post(port, "/api/cameras/rear/talk", #"{"sdp": "v=0"}"#, type: "application/json")
            #expect(json.status == 415 && WHEPTests.code(json) == "unsupported_media_type", "\(json.text)")
            let garbage = try await WHEPTests.post(port, "/api/cameras/rear/talk", "hello")
            #expect(garbage.status == 400 && WHEPTests.code(garbage) == "invalid_sdp", "\(garbage.text)")
            // A viewer's offer (video it would receive) and one that only receives sound say nothing.
            let watching = try await WHEPTests.post(port, "/api/cameras/rear/talk", WHEPTests.offer)
            #expect(watching.status == 422 && WHEPTests.code(watching) == "unsupported_codec", "\(watching.text)")
            let listening = try await WHEPTests.post(port, "/api/cameras/rear/talk", Self.offer(direction: "recvonly"))
            #expect(listening.status == 422 && WHEPTests.code(listening) == "unsupported_codec", "\(listening.text)")
            let pcmu = try await WHEPTests.post(port, "/api/cameras/rear/talk", Self.offer(codec: "PCMU/8000"))
            #expect(pcmu.status == 422, "\(pcmu.text)")
            let noSpeaker = try await WHEPTests.post(port, "/api/cameras/mute/talk", Self.offer())
            #expect(noSpeaker.status == 422 && WHEPTests.code(noSpeaker) == "unsupported", "\(noSpeaker.text)")
            #expect(try await Self.speaker(port, "mute") == nil)
            let unknown = try await WHEPTests.post(port, "/api/cameras/nowhere/talk", Self.offer())
            #expect(unknown.status == 404, "\(unknown.text)")
            #expect(app.talk.count == 0 && !app.talk.isTalking("rear"))
            // The refusals left the speaker free: a good offer talks.
            #expect(try await WHEPTests.post(port, "/api/cameras/rear/talk", Self.offer()).status == 201)
        }
    }

    @Test func talkingNeedsAnOperatorAndSoDoesHearingItBack() async throws {
        let accounts = try AuthLiveTests.accounts()
        try await withServer({ $0.auth = accounts }) { app, port in
            app.talk.connectTimeout.withLock { $0 = 600 }
            let viewer = ["Authorization": "Basic " + Data("vic:viewer pw".utf8).base64EncodedString()]
            let op = ["Authorization": "Basic " + Data("ann:pass word".utf8).base64EncodedString()]
            #expect(try await WHEPTests.post(port, "/api/cameras/rear/talk", Self.offer(), headers: viewer).status == 403)
            #expect(try await fetch(port, "/api/cameras/rear/speaker.wav", headers: viewer).status == 403)
            let c = try await WHEPTests.post(port, "/api/cameras/rear/talk", Self.offer(), headers: op)
            #expect(c.status == 201, "\(c.text)")
            let wav = try await fetch(port, "/api/cameras/rear/speaker.wav?seconds=1", headers: op)
            #expect(wav.status == 200 && wav.headers["content-type"] == "audio/wav" && wav.body.count >= 44, "\(wav.status)")
            #expect(try await fetch(port, "/api/cameras/rear/speaker.wav?seconds=31", headers: op).status == 400)
            #expect(try await fetch(port, "/api/cameras/rear/speaker.wav?seconds=-1", headers: op).status == 400)
        }
    }

    @Test func configurationNamesTheSpeaker() throws {
        let c = try Configuration.parse(Array(#"""
            {"cameras": [{"id": "a", "source": "v4l2", "device": "/dev/video0", "speaker": "hw:CARD=UAC2Gadget,DEV=0"},
                         {"id": "b", "source": "synthetic", "speaker": null},
                         {"id": "c", "source": "synthetic"}]}
            """#.utf8))
        guard case .list(let e) = c.cameras else { Issue.record("not a list"); return }
        #expect(e.map(\.speaker) == [.pcm("hw:CARD=UAC2Gadget,DEV=0"), Configuration.AudioSource.none, nil])
        for (json, message) in [
            (#"{"cameras": [{"id": "s", "source": "v4l2", "device": "/dev/video0", "speaker": "auto"}]}"#,
             "cameras[0].speaker: 'auto' is not a device: name an ALSA device (hw:CARD=…,DEV=0, default), \"synthetic\" or null"),
            (#"{"cameras": [{"id": "s", "source": "synthetic", "speaker": true}]}"#,
             "cameras[0].speaker: expected \"synthetic\", an ALSA device name or null, found a boolean"),
        ] {
            #expect(throws: Configuration.Error(description: message), "\(json)") { try Configuration.parse(Array(json.utf8)) }
        }
    }
}

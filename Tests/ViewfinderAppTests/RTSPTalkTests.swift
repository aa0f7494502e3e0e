// ONVIF's audio backchannel over RTSP (issue 39): a DESCRIBE requiring
// `www.onvif.org/ver20/backchannel` takes the camera's speaker and is answered with a section
// the client sends G.711 into; one talker a camera, shared with WHIP's talk route; the speaker
// given back when the talker's connection goes. Here at the DESCRIBE (what runs under the
// sanitizers: the talk's hand-over from the request to its media and back); GStreamer's rtspsrc
// talking a tone onto the speaker over TCP and UDP is Tests/onvif/test_backchannel.py's.

import CaptureTestSupport
import Foundation
import Testing
@testable import ViewfinderApp

@Suite struct RTSPTalkTests {
    /// A DESCRIBE of `path` on a connection of its own, answered (left open: the caller's).
    static func describe(_ rtsp: Int, _ path: String, require: String? = "www.onvif.org/ver20/backchannel") async throws -> TestConnection {
        let c = try TestConnection(port: rtsp)
        var head = "DESCRIBE rtsp://127.0.0.1:\(rtsp)\(path) RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n"
        if let require { head += "Require: \(require)\r\n" }
        try c.send(head + "\r\n")
        try await c.readHead()
        // An RTSP refusal has no body and its connection stays open: read only what is announced.
        if let n = c.headers["content-length"].flatMap(Int.init), n > 0 { try await c.read { $0.count >= n } }
        return c
    }

    static func talking(_ port: Int) async throws -> Bool? { try await TalkTests.speaker(port)?["talking"] as? Bool }

    @Test func aTalkerTakesTheSpeakerAtItsDescribeAndGivesItBackWhenItGoes() async throws {
        try await withServer { app, port in
            let rtsp = try RTSPTests.rtspPort(app)
            let talker = try await Self.describe(rtsp, "/rear")
            let sdp = String(decoding: talker.body, as: UTF8.self)
            #expect(talker.status == 200, "\(talker.status) \(sdp)")
            let sections = sdp.components(separatedBy: "\r\nm=").dropFirst()
            let back = sections.filter { $0.contains("a=sendonly") }
            #expect(back.count == 1 && back.first?.hasPrefix("audio ") == true && back.first?.contains("PCMU/8000") == true, "\(sdp)")
            #expect(sections.contains { $0.hasPrefix("video ") && $0.contains("a=recvonly") }, "\(sdp)")
            #expect(try await Self.talking(port) == true)
            // One talker a camera: a second is refused, by RTSP and by WHIP; a viewer still watches.
            let second = try await Self.describe(rtsp, "/rear")
            #expect(second.status == 503)
            let main = try await Self.describe(rtsp, "/main")  // the same camera's speaker
            #expect(main.status == 503)
            let whip = try await WHEPTests.post(port, "/api/cameras/rear/talk", TalkTests.offer())
            #expect(whip.status == 409 && WHEPTests.code(whip) == "talk_busy", "\(whip.text)")
            let viewer = try await Self.describe(rtsp, "/rear", require: nil)
            #expect(viewer.status == 200 && !String(decoding: viewer.body, as: UTF8.self).contains("a=sendonly"))
            // Gone without a TEARDOWN: its connection closes, its media goes, the speaker is free.
            _ = consume talker
            #expect(try await eventually { try await Self.talking(port) == false })
            let next = try await Self.describe(rtsp, "/main")
            #expect(next.status == 200, "\(next.status)")
        }
    }

    @Test func whoCannotTalkIsToldWhy() async throws {
        try await withServer({
            $0.cameras = .list([.init(id: "rear", source: .synthetic, position: "rear"),
                                .init(id: "mute", source: .synthetic, position: "front", speaker: Configuration.AudioSource.none)])
        }) { app, port in
            _ = try await fetch(port, "POST", "/api/cameras/mute/session/start", body: "{}")
            let rtsp = try RTSPTests.rtspPort(app)
            // RTSP's 551 Option Not Supported: nothing to talk to, pictures alone, or a requirement unknown.
            #expect(try await Self.describe(rtsp, "/mute").status == 551)
            #expect(try await Self.describe(rtsp, "/rear/jpeg").status == 551)
            #expect(try await Self.describe(rtsp, "/rear", require: "com.example.teleport").status == 551)
            #expect(try await Self.describe(rtsp, "/nowhere").status == 404)
            #expect(try await Self.talking(port) == false)
            #expect(try await Self.describe(rtsp, "/mute", require: nil).status == 200)
        }
    }
}

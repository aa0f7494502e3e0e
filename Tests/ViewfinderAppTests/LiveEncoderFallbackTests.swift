// A live stream whose encoder fails mid-stream goes on with the next candidate (issue 38): a
// hardware encoder lost (FakeEncoders.failing: EIO after 60 frames, other parameter sets than
// libx264's) hands over to libx264 from an IDR of the same frame, on the same timeline — an
// RTSP client decoding across it and a live.mp4 client reading across it both stay, and decode
// every frame; the state names the new encoder, /api/cameras the failed one and why, /metrics
// counts the fallback. The probe's part is LiveEncoderChainTests'.

import CaptureTestSupport
import Foundation
import Movie
import Testing
@testable import ViewfinderApp

@Suite struct LiveEncoderFallbackTests {
    static func liveEncoder(_ port: Int) async throws -> String? {
        let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
        return (state["live"] as? [[String: Any]])?.first { $0["name"] as? String == "main" }?["encoder"] as? String
    }

    @Test func anEncoderFailingMidStreamHandsOverWithoutDroppingAClient() async throws {
        try await withServer(encoders: [FakeEncoders.failing(after: 60, name: "fallback-test"), .libavcodec(.x264)]) { app, port in
            #expect(try await Self.liveEncoder(port) == "h264_fallback-test", "the first candidate that works is used")
            _ = try await fetch(port, "POST", "/api/session/start")
            // An RTSP client decoding 150 frames: 60 from the failing encoder, the rest from libx264.
            let url = "rtsp://127.0.0.1:\(try RTSPTests.rtspPort(app))/rear"
            async let rtsp = RTSPTests.run("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-i", url, "-frames:v", "150",
                                                                "-enc_time_base", "-1", "-f", "null", "-"], timeout: TestTime.patience * 2)
            let mp4 = try TestConnection(port: port)
            try mp4.request("GET", "/cameras/rear/live.mp4")
            #expect(await eventually(timeout: TestTime.patience) { (try? await Self.liveEncoder(port)) == "libx264" }, "handed over to libx264")
            // The live.mp4 client reads on across the hand-over: 100 fragments in one response.
            let path = try await LiveMP4Tests.record(mp4, fragments: 100)
            defer { unlink(path) }
            let decode = try await LiveMP4Tests.run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-f", "null", "-"])
            #expect(decode.status == 0 && decode.err.isEmpty, "live.mp4 decodes across the hand-over: \(decode.err)")
            let keys = try await LiveMP4Tests.keyFrames(path)
            #expect(keys.count >= 100, "\(keys.count) frames in one stream")
            let r = try await rtsp
            #expect(r.status == 0, "the RTSP client decoded 150 frames across it: \(r.err)")

            let list = try #require(try await fetch(port, "/api/cameras").json as? [String: Any])
            let encoders = try #require(list["encoders"] as? [[String: Any]])
            #expect(encoders.map { $0["name"] as? String } == ["fallback-test", "x264"])
            #expect(encoders.first?["available"] as? Bool == false)
            #expect((encoders.first?["reason"] as? String)?.contains("avcodec_send_frame h264_fallback-test") == true, "\(encoders)")
            let metrics = String(decoding: try await fetch(port, "/metrics").body, as: UTF8.self)
            #expect(metrics.contains("viewfinder_live_encoder_fallbacks_total 1"))
            #expect(metrics.contains("viewfinder_live_encoder_available{encoder=\"fallback-test\"} 0"))
            // A stream started after it is libx264's from its first frame.
            _ = try await fetch(port, "POST", "/api/session/stop")
            _ = try await fetch(port, "POST", "/api/session/start")
            #expect(try await Self.liveEncoder(port) == "libx264")
        }
    }
}

// RTSP with real clients: ffprobe and ffmpeg over UDP and interleaved TCP, GStreamer's
// rtspsrc, each decoding H.264 at the camera's size; `/main` following the main session
// across a switch and a prepare; the same users as HTTP (Basic and Digest, a viewer plays);
// an unknown camera 404, a stopped one 503; a copy of the stream (ffmpeg -c copy) starting at a
// stamped keyframe.

import CaptureTestSupport
import Foundation
import JPEG
import Session
import Testing
@testable import ViewfinderApp

@Suite struct RTSPTests {
    static func run(_ tool: String, _ args: [String], timeout: Double = 30) async throws -> (status: Int32, out: String, err: String) {
        try await LiveMP4Tests.run(tool, args, timeout: timeout)
    }

    /// ffprobe's "codec,width,height" for `url` over `transport`, and its errors.
    static func probe(_ url: String, transport: String = "tcp") async throws -> (stream: String, err: String) {
        // A socket silent for 10 s is an error of ffprobe's own, not a wait for the deadline.
        let r = try await run("/usr/bin/ffprobe", ["-v", "error", "-timeout", "10000000", "-rtsp_transport", transport, "-select_streams", "v:0",
                                                   "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", url])
        return (r.out.trimmingCharacters(in: .whitespacesAndNewlines), r.err)
    }

    static func twoCameras(_ c: inout Configuration) {
        c.cameras = .list([.init(id: "rear", source: .synthetic, position: "rear", preset: "352x288"),
                           .init(id: "front", source: .synthetic, position: "front", preset: "640x480")])
    }

    /// ffmpeg decoding `frames` frames of `url` to nothing. Frames keep their 90 kHz capture
    /// times (`-enc_time_base -1`): a capture late under load would otherwise share a 1/30 s
    /// slot with the next, which the null muxer reports as an error that is not one of decoding.
    static func decode(_ url: String, transport: String = "udp", frames: Int) async throws -> (status: Int32, out: String, err: String) {
        try await run("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", transport, "-i", url, "-frames:v", String(frames),
                                          "-enc_time_base", "-1", "-f", "null", "-"])
    }

    static func rtspPort(_ app: Application) throws -> Int { try #require(app.rtspPort) }

    /// ffmpeg decoding `url` over TCP until the caller kills it (SIGKILL, then waits).
    static func decodingClient(_ url: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-v", "error", "-rtsp_transport", "tcp", "-i", url, "-f", "null", "-"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    @Test(arguments: ["udp", "tcp"])
    func ffmpegDecodesEachCameraAtItsSize(transport: String) async throws {
        try await withServer(Self.twoCameras) { app, port in
            _ = try await fetch(port, "POST", "/api/cameras/rear/session/start")
            _ = try await fetch(port, "POST", "/api/cameras/front/session/start")
            let base = "rtsp://127.0.0.1:\(try Self.rtspPort(app))"
            #expect(try await Self.probe("\(base)/rear", transport: transport).stream == "h264,352,288")
            #expect(try await Self.probe("\(base)/front", transport: transport).stream == "h264,640,480")
            // 60 frames decoded, none in error: every unit arrives, SPS/PPS in band.
            let decode = try await Self.decode("\(base)/front", transport: transport, frames: 60)
            #expect(decode.status == 0 && decode.err.isEmpty, "ffmpeg: \(decode.err)")
        }
    }

    /// FFmpeg's parser leaves the first access unit it reads without a timestamp (runtime.c's
    /// lead-in says why); a copy of the stream — what Frigate's and Home Assistant's recorders
    /// write — then began with an unstamped IDR and the warning "Timestamps are unset in a
    /// packet". With the lead-in the copy starts at an IDR with its timestamp, and says nothing.
    @Test(arguments: ["udp", "tcp"])
    func aCopyOfTheStreamStartsAtAStampedKeyframe(transport: String) async throws {
        try await withServer { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let url = "rtsp://127.0.0.1:\(try Self.rtspPort(app))/rear"
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("rtsp-copy-\(UUID().uuidString).ts").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            let copy = try await Self.run("/usr/bin/ffmpeg", ["-v", "warning", "-rtsp_transport", transport, "-i", url,
                                                              "-frames:v", "30", "-c", "copy", "-y", file])
            #expect(copy.status == 0 && !copy.err.contains("Timestamps are unset"), "ffmpeg: \(copy.err)")
            let packets = try await Self.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                                 "packet=pts,flags", "-of", "csv=p=0", file])
            // "pts,flags," (the last field, side data, empty).
            let first = (packets.out.split(separator: "\n").first ?? "").split(separator: ",", omittingEmptySubsequences: false)
            #expect(first.count >= 2 && Int(first[0]) != nil && first[1].hasPrefix("K"), "the copy's first packets: \(packets.out.prefix(120))")
        }
    }

    @Test func manyClientsShareOneMediaAndGStreamerPlaysIt() async throws {
        try await withServer { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let url = "rtsp://127.0.0.1:\(try Self.rtspPort(app))/rear"
            // Three clients at once: gst-launch's rtspsrc and two ffmpegs, 45 frames each.
            // gst-launch prints each frame its sink takes (-v, silent=false) and its warnings.
            // rtspsrc waits 30 s for UDP (`timeout`), not its 5, before it retries over TCP: on
            // a loaded machine the first packet can come late, and the retry begins with a PAUSE
            // on the first connection — likely the one failure seen (a fresh-clone CI run,
            // 2026-11-29: "Could not send message. (Received end-of-file)" from
            // gst_rtspsrc_pause), not reproduced here in 40 runs, loaded or not.
            async let gst = Self.run("/usr/bin/gst-launch-1.0", ["-v", "rtspsrc", "location=\(url)", "latency=0",
                                                                "timeout=30000000", "!",
                                                                "rtph264depay", "!", "h264parse", "!", "avdec_h264", "!",
                                                                "fakesink", "num-buffers=45", "silent=false"])
            async let a = Self.decode(url, frames: 45)
            async let b = Self.decode(url, transport: "tcp", frames: 45)
            let (g, x, y) = try await (gst, a, b)
            // Each decoded its 45 frames. Not checked: that none logged an error — a client that
            // joined the media a moment after the first (a loaded machine) saw a P-frame or two
            // before the IDR asked for it, which ffmpeg reports as missing references. That every
            // unit arrives is ffmpegDecodesEachCameraAtItsSize's check, of a media's only client.
            let played = g.out.components(separatedBy: "\n").filter { $0.contains("last-message = chain") }.count
            let warned = g.out.components(separatedBy: "\n").filter { $0.hasPrefix("WARNING") || $0.contains("Retrying") }
            #expect(g.status == 0 && played == 45, "gst-launch: \(played) frames; \(warned); \(g.err)")
            #expect(x.status == 0, "ffmpeg udp: \(x.err)")
            #expect(y.status == 0, "ffmpeg tcp: \(y.err)")
        }
    }

    /// A client joining a media that is already playing starts at an IDR asked for it, not at the
    /// interval's next one: with keyframes 60 s apart, a second ffmpeg joining a second after the
    /// first decodes its 45 frames (without the request it would see P-frames only, for a minute).
    @Test func aClientJoiningAPlayingMediaGetsAKeyframeAtOnce() async throws {
        try await withServer({ $0.live.keyframeInterval = 60 }) { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let url = "rtsp://127.0.0.1:\(try Self.rtspPort(app))/rear"
            let first = try Self.decodingClient(url)
            defer {
                kill(first.processIdentifier, SIGKILL)
                first.waitUntilExit()
            }
            // The first client plays: the live output has encoded a second past its IDR.
            func framesIn() async -> Int {
                let outputs = (try? await fetch(port, "/api/session").json as? [String: Any])?["outputs"] as? [[String: Any]]
                return outputs?.first { $0["type"] as? String == "live" }?["framesIn"] as? Int ?? 0
            }
            #expect(await eventually(timeout: TestTime.patience) { await framesIn() > 0 })
            let playing = await framesIn()
            #expect(await eventually(timeout: TestTime.patience) { await framesIn() >= playing + 30 })
            let joiner = try await Self.run("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-i", url, "-frames:v", "45",
                                                                "-enc_time_base", "-1", "-f", "null", "-"], timeout: TestTime.patience)
            #expect(joiner.status == 0, "the joiner decoded 45 frames: \(joiner.err)")
            #expect(first.isRunning, "the first client still plays")
        }
    }

    @Test func mainFollowsASwitchAndAPrepare() async throws {
        try await withServer(Self.twoCameras) { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let main = "rtsp://127.0.0.1:\(try Self.rtspPort(app))/main"
            #expect(try await Self.probe(main).stream == "h264,352,288")
            _ = try await fetch(port, "POST", "/api/session/switch", body: #"{"camera": "front"}"#)
            #expect(try await Self.probe(main).stream == "h264,640,480", "a new client of /main gets the new main camera")
            _ = try await fetch(port, "POST", "/api/session/prepare", body: #"{"preset": "1280x720"}"#)
            #expect(try await eventually(timeout: 20) { try await Self.probe(main).stream == "h264,1280,720" })
        }
    }

    /// Following the main camera is one mechanism (issue 36): an RTSP `/main` client, a WHEP
    /// `/api/whep` peer and an MJPEG `/stream` viewer are all the new camera's clients the
    /// moment the switch has answered — the one state read after it shows them there, none
    /// left on the old camera (a feeder that re-resolved its hub each second lagged by up to 1 s).
    @Test func mainClientsOfEveryTransportFollowASwitchAtOnce() async throws {
        func clients(_ port: Int, _ camera: String) async throws -> [String: [String: Int]] {
            let state = try #require(try await fetch(port, "/api/cameras/\(camera)/session").json as? [String: Any])
            let outputs = try #require(state["outputs"] as? [[String: Any]])
            var byType: [String: [String: Int]] = [:]
            for o in outputs { byType[o["type"] as? String ?? "?"] = o["clients"] as? [String: Int] ?? [:] }
            return byType
        }
        try await withServer(Self.twoCameras) { app, port in
            app.whep.connectTimeout.withLock { $0 = 600 }
            _ = try await fetch(port, "POST", "/api/session/start")
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            let whep = try await WHEPTests.post(port, "/api/whep", WHEPTests.offer)
            #expect(whep.status == 201)
            // ffmpeg on /main, decoding until the test ends it: past the switch, on either camera
            // (a fixed number of frames ran out before the switch on a loaded machine).
            let rtsp = try Self.decodingClient("rtsp://127.0.0.1:\(try Self.rtspPort(app))/main")
            defer {
                kill(rtsp.processIdentifier, SIGKILL)
                rtsp.waitUntilExit()
            }
            // The WHEP peer is adaptive: on the camera's sub stream or its main one (issue 38).
            func webrtc(_ c: [String: [String: Int]]) -> Int { (c["live"]?["webrtc"] ?? 0) + (c["liveSub"]?["webrtc"] ?? 0) }
            #expect(await eventually(timeout: 20) {
                let rear = (try? await clients(port, "rear")) ?? [:]
                return rear["live"]?["rtsp"] == 1 && webrtc(rear) == 1 && rear["preview"]?["mjpeg"] == 1
            }, "every client watches the rear camera")
            #expect(try await fetch(port, "POST", "/api/session/switch", body: #"{"camera": "front"}"#).status == 200)
            let (front, rear) = (try await clients(port, "front"), try await clients(port, "rear"))
            #expect(front["live"]?["rtsp"] == 1 && webrtc(front) == 1, "the live clients moved with the switch: \(front)")
            #expect(front["preview"]?["mjpeg"] == 1, "the MJPEG viewer moved with it: \(front)")
            #expect(rear["live"]?["rtsp"] ?? 0 == 0 && webrtc(rear) == 0, "none left behind: \(rear)")
            // The live clients take the new camera's stream from its first IDR: units flow to them.
            #expect(await eventually(timeout: 20) {
                let live = (try? await fetch(port, "/api/cameras/front/session").json as? [String: Any])?["outputs"] as? [[String: Any]]
                return (live?.first { $0["type"] as? String == "live" }?["framesIn"] as? Int ?? 0) > 0
            })
            #expect(rtsp.isRunning, "ffmpeg still decoding /main")
            // The MJPEG viewer reads on, and its parts turn from the rear camera's 352x288 to the
            // front camera's 640x480: counted on the new camera, and fed by it.
            @Sendable func fromFront(_ body: [UInt8]) -> Bool {
                Multipart.parse(body).parts.contains { (try? JPEGDecoder.size(of: $0.body))?.width == 640 }
            }
            try await viewer.read(until: fromFront)
            #expect(!viewer.eof && fromFront(viewer.body), "the MJPEG viewer gets the front camera's frames after the switch")
            if let location = whep.headers["location"] { _ = try await fetch(port, "DELETE", location) }
        }
    }

    @Test func anUnknownCameraIs404AndAStoppedOne503() async throws {
        try await withServer(Self.twoCameras) { app, _ in
            let base = "rtsp://127.0.0.1:\(try Self.rtspPort(app))"
            let unknown = try await Self.probe("\(base)/nowhere")
            #expect(unknown.stream.isEmpty && unknown.err.contains("404"), "\(unknown.err)")
            let stopped = try await Self.probe("\(base)/front")  // not started (the main camera, rear, is)
            #expect(stopped.stream.isEmpty && stopped.err.contains("503"), "\(stopped.err)")
        }
    }

    @Test func theSameUsersAsHTTPSignInByBasicOrDigest() async throws {
        let accounts = try AuthLiveTests.accounts()
        try await withServer({ $0.auth = accounts }) { app, port in
            _ = try await fetch(port, "POST", "/api/session/start", headers: ["Authorization": "Basic " + Data("ann:pass word".utf8).base64EncodedString()])
            let rtsp = try Self.rtspPort(app)
            let none = try await Self.probe("rtsp://127.0.0.1:\(rtsp)/rear")
            #expect(none.stream.isEmpty && none.err.contains("401"), "no credentials: \(none.err)")
            let wrong = try await Self.probe("rtsp://vic:nope@127.0.0.1:\(rtsp)/rear")
            #expect(wrong.stream.isEmpty && wrong.err.contains("401"), "a wrong password: \(wrong.err)")
            // ffmpeg answers the Digest challenge (the stronger of the two offered); a viewer may play.
            #expect(try await Self.probe("rtsp://cam:ffmpeg1@127.0.0.1:\(rtsp)/rear").stream == "h264,352,288")
            // GStreamer's rtspsrc answers Basic or Digest as offered, with its own credentials:
            // signed in, the stream plays (buffers reach the sink). rtspsrc sometimes reports its
            // own PAUSE at shutdown, after the tenth buffer, as an error ("Could not send
            // message"), and gst-launch then exits 1: the buffers are the evidence, not the status.
            let g = try await Self.run("/usr/bin/gst-launch-1.0", ["-v", "rtspsrc", "location=rtsp://127.0.0.1:\(rtsp)/rear",
                                                                   "user-id=ann", "user-pw=pass word", "!", "rtph264depay", "!",
                                                                   "fakesink", "silent=false", "num-buffers=10"])
            let buffers = g.out.components(separatedBy: "last-message = chain").count - 1
            #expect(buffers >= 1 && (g.status == 0 || !g.err.contains("401")), "gst-launch with credentials: \(buffers) buffers; \(g.err)")
        }
    }
}

// RTSP with sound (issue 37): a camera whose microphone runs is described with a second
// stream, AAC (MPEG4-GENERIC), which ffprobe reads; /main stays picture only. ffmpeg — the
// RTSP client of Frigate, Home Assistant and ffplay — lines the two up from their RTP times
// and sender reports: a beep plays where the picture's timecode crosses its second.

import Capture
import CaptureTestSupport
import Foundation
import Testing
@testable import ViewfinderApp

@Suite struct RTSPSoundTests {
    static func withSound(_ c: inout Configuration) {
        c.synthetic.microphone = true
        c.cameras = .list([.init(id: "rear", source: .synthetic, position: "rear", preset: "352x288", timecode: true)])
    }

    /// Starts the session and waits (bounded) until its microphone runs.
    static func startWithSound(_ port: Int) async throws {
        _ = try await fetch(port, "POST", "/api/session/start")
        let running = try await eventually(timeout: TestTime.patience) {
            ((try await fetch(port, "/api/session").json as? [String: Any])?["audio"] as? [String: Any])?["running"] as? Bool == true
        }
        try #require(running, "the synthetic microphone runs")
    }

    @Test func aCameraWithAMicrophoneIsDescribedWithAAC() async throws {
        try await withServer(Self.withSound) { app, port in
            try await Self.startWithSound(port)
            let base = "rtsp://127.0.0.1:\(try RTSPTests.rtspPort(app))"
            let r = try await RTSPTests.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries",
                                                                "stream=codec_type,codec_name,sample_rate,channels", "-of", "csv=p=0", "\(base)/rear"])
            let streams = r.out.split(separator: "\n").map(String.init)
            #expect(streams == ["h264,video", "aac,audio,48000,1"], "ffprobe: \(streams) \(r.err)")
            // /main follows a switch, which a media's SDP cannot: it stays picture only.
            let main = try await RTSPTests.run("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries",
                                                                   "stream=codec_type", "-of", "csv=p=0", "\(base)/main"])
            #expect(main.out.split(separator: "\n") == ["video"], "ffprobe /main: \(main.out) \(main.err)")
        }
    }

    /// ffmpeg copies 4 s of the stream into Matroska; decoded, each beep (captured at a whole
    /// second) is heard at a movie time whose picture was captured at that second: the nearest
    /// frame's timecode plus the distance to it. The first frame is left out: it is the last
    /// keyframe replayed to the joining client, which ffmpeg places at 0 whatever its time.
    /// As found (issue 38's bench): a client that sets up the picture alone (an NVR, a
    /// detector) left the sound's stream without a receiver; its appsrc stopped "not-linked",
    /// the shared media went to error, and every later DESCRIBE of the path was 503.
    @Test func aClientOfThePictureAloneLeavesTheMediaServingOthers() async throws {
        try await withServer(Self.withSound) { app, port in
            try await Self.startWithSound(port)
            let rtsp = try RTSPTests.rtspPort(app)
            let first = try await offload { try RawRTSP.play(port: rtsp, path: "/rear") }
            #expect(first.status == "RTSP/1.0 200 OK")
            // The media plays (its sound with no one to take it) while others join.
            let others = try await offload { try (0..<3).map { _ in try RawRTSP.play(port: rtsp, path: "/rear") } }
            #expect(others.map(\.status) == Array(repeating: "RTSP/1.0 200 OK", count: 3), "later DESCRIBEs: \(others.map(\.status))")
            _ = first
        }
    }

    @Test func ffmpegPlaysPictureAndSoundInSync() async throws {
        try await withServer(Self.withSound) { app, port in
            try await Self.startWithSound(port)
            let url = "rtsp://127.0.0.1:\(try RTSPTests.rtspPort(app))/rear"
            let file = NSTemporaryDirectory() + "vf-rtsp-sound-\(UUID().uuidString).mkv"
            defer { unlink(file) }
            // 4 s of input (`-t` before `-i`: whichever stream passes it ends the read, where an
            // output duration would wait for every stream — a starved microphone's for good).
            let copy = try await RTSPTests.run("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-t", "4", "-i", url,
                                                                  "-c", "copy", "-y", file], timeout: 30 * TestTime.scale)
            try #require(copy.status == 0, "ffmpeg: \(copy.err)")
            // Every frame as decoded (passthrough: ffmpeg would repeat frames to a constant rate).
            let gray = try await AudioAPITests.decode(["-i", file, "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray"])
            let probe = try await RTSPTests.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                                    "frame=best_effort_timestamp_time", "-of", "csv=p=0", file])
            // One line a frame ("0.000000," where side data follows); blank lines between sections.
            let times = probe.out.split(separator: "\n").compactMap { line in
                line.split(separator: ",", omittingEmptySubsequences: false).first.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            }
            let size = 352 * 288
            let frames: [(pts: Double, captured: Double)] = (0..<min(gray.count / size, times.count)).dropFirst().compactMap { k in
                Timecode.read(width: 352, height: 288) { x, y in Int(gray[k * size + y * 352 + x]) }
                    .map { (times[k], Double($0.milliseconds) / 1000) }
            }
            try #require(frames.count > 60, "\(frames.count) frames with a timecode")
            let pcm = try await AudioAPITests.decode(["-i", file, "-map", "0:a:0", "-af", "aresample=async=1:min_hard_comp=0.001:first_pts=0",
                                                      "-f", "s16le", "-ac", "1"])
            let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
            let onsets = AudioAPITests.onsets(samples, start: 0).reduce(into: [Double]()) { kept, t in
                if kept.last.map({ t - $0 > 0.5 }) ?? true { kept.append(t) }
            }
            // Each beep's capture time, read through the picture shown when it plays.
            let heard = onsets.compactMap { t in
                frames.min { abs($0.pts - t) < abs($1.pts - t) }.map { $0.captured + t - $0.pts }
            }
            // The timecode's millisecond floor and AAC's reconstruction: within 5 ms.
            AudioAPITests.expectOnTheSecond(heard, within: 5, "its picture (beeps at \(onsets))") {
                #expect(heard.count >= 3, "\(heard.count) beeps in \(samples.count) samples")
            }
        }
    }
}

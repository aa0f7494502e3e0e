// `GET /cameras/{id}/live.mp4`: the live H.264 stream as fragmented MP4, read by ffprobe and
// decoded by ffmpeg as a player would; a new format ends the stream and the next one starts
// at the new size.

import Foundation
import CaptureTestSupport
import Capture
import SystemSupport
import Testing
@testable import ViewfinderApp

@Suite struct LiveMP4Tests {
    /// The top-level MP4 boxes of `bytes` that are whole: (type, bytes of the box).
    static func boxes(_ bytes: [UInt8]) -> [(type: String, bytes: ArraySlice<UInt8>)] {
        var out: [(String, ArraySlice<UInt8>)] = []
        var i = 0
        while i + 8 <= bytes.count {
            let n = bytes[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) }
            guard n >= 8, i + n <= bytes.count else { break }
            out.append((String(decoding: bytes[(i + 4)..<(i + 8)], as: UTF8.self), bytes[i..<(i + n)]))
            i += n
        }
        return out
    }

    /// Runs a tool to completion (bounded), on a thread of its own: an async test never waits
    /// on Swift's cooperative pool, whose two threads every in-process server's routes need.
    static func run(_ tool: String, _ args: [String], timeout: Double = 60) async throws -> (status: Int32, out: String, err: String) {
        try await offload { try runBlocking(tool, args, timeout: timeout) }
    }

    /// Runs a tool to completion (bounded): its exit status, standard output and standard error.
    static func runBlocking(_ tool: String, _ args: [String], timeout: Double = 60) throws -> (status: Int32, out: String, err: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Both pipes drained while it runs: a tool that writes more than a pipe holds (64 KB;
        // gst-launch -v) would otherwise block on it until the deadline.
        let drained = DispatchGroup()
        let texts = Locked(["", ""])
        for (i, pipe) in [out, err].enumerated() {
            DispatchQueue.global().async(group: drained) {
                let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                texts.withLock { $0[i] = text }
            }
        }
        let deadline = TestTime.deadline(timeout)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning {
            // SIGTERM first; a tool blocked in a read that ignores it (ffprobe waiting on an
            // RTSP socket held a test run for good) is killed after a grace period.
            p.terminate()
            let grace = Date() + 2
            while p.isRunning && Date() < grace { usleep(20_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
        }
        _ = drained.wait(timeout: .now() + 10)  // its pipes end with it (unless a child it left holds them)
        let (o, e) = texts.withLock { ($0[0], $0[1]) }
        return (p.terminationStatus, o, e)
    }

    /// ffprobe's key_frame flag of every frame of the file, "1" or "0", in order.
    static func keyFrames(_ path: String) async throws -> [String] {
        let frames = try await run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                  "frame=key_frame", "-of", "csv=p=0", path])
        // One line a frame ("1," for a keyframe: the SEI side data adds an empty field and lines).
        return frames.out.split(separator: "\n").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ", ")) }
            .filter { !$0.isEmpty }
    }

    /// Reads `fragments` whole fragments from a live.mp4 client and writes the whole boxes to a file.
    static func record(_ c: TestConnection, fragments: Int) async throws -> String {
        try await c.read(timeout: 20) { boxes($0).filter { $0.type == "mdat" }.count >= fragments }
        let whole = boxes(c.body)
        let path = NSTemporaryDirectory() + "vf-live-\(UUID().uuidString).mp4"
        try Data(whole.flatMap(\.bytes)).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func ffprobeReadsH264AtTheCamerasSizeStartingAtAKeyframeAndEveryFrameDecodes() async throws {
        try await withServer { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try TestConnection(port: port)
            try c.request("GET", "/cameras/rear/live.mp4")
            let path = try await Self.record(c, fragments: 30)
            defer { unlink(path) }
            #expect(c.status == 200 && c.headers["content-type"] == "video/mp4")
            #expect(Self.boxes(c.body).prefix(2).map(\.type) == ["ftyp", "moov"], "the init segment first")
            let stream = try await Self.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                           "stream=codec_name,width,height", "-of", "csv=p=0", path])
            #expect(stream.out.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,352,288", "ffprobe: \(stream.out) \(stream.err)")
            let keys = try await Self.keyFrames(path)
            #expect(keys.count >= 30 && keys.first == "1", "\(keys.count) frames, the first a keyframe: \(keys.prefix(3))")
            let decode = try await Self.run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-f", "null", "-"])
            #expect(decode.status == 0 && decode.err.isEmpty, "ffmpeg decodes every frame: \(decode.err)")
        }
    }

    /// With the synthetic microphone running, live.mp4 has an AAC track beside the picture, and
    /// a beep plays where the picture's capture time crosses its second: the stream's time 0 is
    /// its first keyframe's capture time (read from its timecode), so a beep at stream time m
    /// was captured at t₀ + m. `?audio=0` is the picture alone.
    @Test func theMicrophoneIsAnAACTrackInSync() async throws {
        try await withServer({
            $0.synthetic.microphone = true
            $0.cameras = .list([.init(id: "tc", source: .synthetic, position: "rear", preset: "352x288", timecode: true)])
        }) { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let running = try await eventually(timeout: TestTime.patience) {
                ((try await fetch(port, "/api/session").json as? [String: Any])?["audio"] as? [String: Any])?["running"] as? Bool == true
            }
            try #require(running, "the synthetic microphone runs")
            let c = try TestConnection(port: port)
            try c.request("GET", "/live.mp4")
            // 2.7 s of picture (81 frames at 30 fps): two whole seconds at least.
            let path = try await Self.record(c, fragments: 81 + 2 * 120)
            defer { unlink(path) }
            let streams = try await Self.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels",
                                                            "-of", "csv=p=0", path])
            let lines = streams.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(lines.first?.hasPrefix("h264") == true && lines.contains("aac,48000,1"), "ffprobe: \(lines) \(streams.err)")
            let gray = try await AudioAPITests.decode(["-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray"])
            try #require(gray.count == 352 * 288, "one 352x288 frame decoded")
            let first = try #require(Timecode.read(width: 352, height: 288) { x, y in Int(gray[y * 352 + x]) }, "a timecode")
            let t0 = Double(first.milliseconds) / 1000
            let (beeps, samples) = try await AudioAPITests.beeps(ofFile: path, start: t0)
            AudioAPITests.expectOnTheSecond(beeps, within: 3, "the picture's second (stream times \(beeps.map { $0 - t0 }))") {
                #expect(beeps.count >= 2, "\(beeps.count) beeps in \(samples) samples")
            }
            let mute = try TestConnection(port: port)
            try mute.request("GET", "/live.mp4?audio=0")
            let picture = try await Self.record(mute, fragments: 5)
            defer { unlink(picture) }
            let only = try await Self.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", picture])
            #expect(only.out.trimmingCharacters(in: .whitespacesAndNewlines) == "h264", "audio=0: \(only.out)")
            #expect(try await fetch(port, "/live.mp4?audio=maybe").status == 400)
        }
    }

    @Test func aNewFormatEndsTheStreamAndTheNextStartsAtTheNewSize() async throws {
        try await withServer { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try TestConnection(port: port)
            try c.request("GET", "/live.mp4")
            try await c.read(timeout: 20) { Self.boxes($0).contains { $0.type == "mdat" } }
            _ = try await fetch(port, "POST", "/api/session/prepare", body: #"{"preset": "640x480"}"#)
            #expect(try await c.closedByPeer(timeout: TestTime.patience), "the old format's stream ends")
            let next = try TestConnection(port: port)
            try next.request("GET", "/live.mp4")
            let path = try await Self.record(next, fragments: 5)
            defer { unlink(path) }
            let stream = try await Self.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                           "stream=width,height", "-of", "csv=p=0", path])
            #expect(stream.out.trimmingCharacters(in: .whitespacesAndNewlines) == "640,480", "ffprobe: \(stream.out) \(stream.err)")
        }
    }
}

@Suite struct LiveKeyframeIntervalTests {
    /// `live.keyframeInterval` 0.5: 40 frames (1.3 s at 30 fps) hold an IDR every 15 frames or
    /// so — at least 3 (the default, 2 s, gives the joining client's one and no other).
    @Test func theConfiguredIntervalSetsTheKeyframes() async throws {
        try await withServer({ $0.live.keyframeInterval = 0.5 }) { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let c = try TestConnection(port: port)
            try c.request("GET", "/cameras/rear/live.mp4")
            let path = try await LiveMP4Tests.record(c, fragments: 40)
            defer { unlink(path) }
            let keys = try await LiveMP4Tests.keyFrames(path)
            #expect(keys.count >= 40 && keys.filter { $0 == "1" }.count >= 3, "\(keys.count) frames, keyframes at \(keys.indices.filter { keys[$0] == "1" })")
        }
    }
}

/// Orientation turns the live picture's pixels, as it does the preview's (RTP and WebRTC carry
/// no display matrix): the synthetic timecode, read back from a decoded live frame through the
/// turn, is the frame's capture time.
@Suite struct LiveOrientationTests {
    /// One decoded frame of a live.mp4 client as 8-bit luma: (width, height, pixels).
    static func firstFrame(_ port: Int, _ path: String) async throws -> (Int, Int, [UInt8]) {
        let c = try TestConnection(port: port)
        try c.request("GET", path)
        let mp4 = try await LiveMP4Tests.record(c, fragments: 3)
        defer { unlink(mp4) }
        let size = try await LiveMP4Tests.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                             "stream=width,height", "-of", "csv=p=0", mp4])
        let wh = size.out.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
        let gray = mp4 + ".gray"
        defer { unlink(gray) }
        _ = try await LiveMP4Tests.run("/usr/bin/ffmpeg", ["-v", "error", "-i", mp4, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-y", gray])
        let pixels = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: gray))) ?? Data())
        guard wh.count == 2, pixels.count == wh[0] * wh[1] else { throw CancellationError() }
        return (wh[0], wh[1], pixels)
    }

    @Test(arguments: [(90, false), (0, true), (270, true)])
    func theTimecodeReadsBackThroughTheTurn(rotation: Int, mirrored: Bool) async throws {
        try await withServer({ $0.cameras = .list([.init(id: "tc", source: .synthetic, position: "rear", preset: "640x480", timecode: true)]) }) { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            _ = try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": \#(rotation), "mirrored": \#(mirrored)}"#)
            let (w, h, luma) = try await Self.firstFrame(port, "/live.mp4")
            let turned = rotation == 90 || rotation == 270
            let expected: [Int] = turned ? [480, 640] : [640, 480]
            #expect([w, h] == expected, "the live picture is \(w)x\(h)")
            // Where the unturned frame's pixel (x, y) is in the turned one: clockwise, then mirrored.
            let (W, H) = (640, 480)
            let read = Timecode.read(width: W, height: H) { x, y in
                var (ox, oy): (Int, Int)
                switch rotation {
                case 90: (ox, oy) = (H - 1 - y, x)
                case 180: (ox, oy) = (W - 1 - x, H - 1 - y)
                case 270: (ox, oy) = (y, W - 1 - x)
                default: (ox, oy) = (x, y)
                }
                if mirrored { ox = w - 1 - ox }
                return Int(luma[oy * w + ox])
            }
            let now = UInt64(Date().timeIntervalSince1970 * 1000)
            let ms = try #require(read?.milliseconds, "a timecode where the turn puts it")
            // Recording three fragments and running ffprobe and ffmpeg on them: seconds, more under a sanitizer.
            #expect(ms <= now && Double(now - ms) < 10_000 * TestTime.scale, "capture time \(ms), now \(now)")
        }
    }
}

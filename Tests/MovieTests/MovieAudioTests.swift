import CameraCore
import Foundation
import Movie
import Testing

/// AAC through FFmpeg's encoder, and a movie's sound track placed at its capture time: read
/// back by ffprobe and decoded by ffmpeg.
@Suite struct MovieAudioTests {
    let format = VideoFormat(pixelFormat: .yuyv, width: 320, height: 240, fps: 30)

    @Test(arguments: [(48_000, 1), (44_100, 2), (16_000, 1)])
    func theTrackDescriptionIsWhatTheEncoderWrites(_ rate: Int, _ channels: Int) throws {
        let described = try #require(AudioTrackInfo.aac(sampleRate: rate, channels: channels))
        let encoder = try AudioEncoder(.aac, sampleRate: rate, channels: channels, anchor: 0)
        #expect(encoder.info == described, "\(encoder.info.extradata) vs \(described.extradata)")
    }

    @Test func whatAACCannotTakeIsRefused() {
        #expect(AudioTrackInfo.aac(sampleRate: 37_800, channels: 1) == nil)
        #expect(AudioTrackInfo.aac(sampleRate: 48_000, channels: 3) == nil)
        #expect(throws: MovieError.self) { try AudioEncoder(.aac, sampleRate: 48_000, channels: 6, anchor: 0) }
    }

    @Test func packetsCarryTheCaptureTimeOfTheirFirstSample() throws {
        let t0 = 1_700_000_000.25
        let e = try AudioEncoder(.aac, sampleRate: 48_000, channels: 1, anchor: t0)
        var packets: [AudioPacket] = []
        let silence = [Int16](repeating: 0, count: 480)
        for i in 0..<100 {  // one second
            packets += try silence.withUnsafeBufferPointer { try e.encode($0) }
            #expect(abs(e.nextTime - (t0 + Double(i + 1) * 0.01)) < 1e-6)
        }
        let next = e.nextTime
        packets += try e.flush()
        #expect(packets.count >= 47 && packets.dropLast().allSatisfy { $0.samples == 1024 })
        // The first is the encoder's priming, a frame before the first sample; then one every 1024.
        for (i, p) in packets.enumerated() {
            #expect(abs(p.time - (t0 + Double(i - 1) * 1024 / 48_000)) < 1e-6, "packet \(i) at \(p.time - t0)")
        }
        #expect(abs(next - (t0 + 1)) < 1e-6, "the next sample is the one after the second taken: \(next - t0)")
    }

    /// A 44.1 kHz microphone (Opus has no such rate) is resampled to 48 kHz: 20 ms packets back
    /// to back, the input's time kept (a second in is a second on).
    @Test func opusTakesA44100HzMicrophoneThroughTheResampler() throws {
        let track = try #require(AudioTrackInfo.forInput(.opus, sampleRate: 44_100, channels: 1))
        #expect(track.sampleRate == 48_000 && AudioTrackInfo.forInput(.opus, sampleRate: 16_000, channels: 1)?.sampleRate == 16_000)
        let t0 = 1_700_000_000.5
        let e = try AudioEncoder(.opus, sampleRate: 48_000, channels: 1, anchor: t0, inputRate: 44_100)
        var packets: [AudioPacket] = []
        for k in 0..<100 {  // 10 ms buffers of 441 samples
            let tone = (0..<441).map { Int16(8_000 * sin(2 * Double.pi * 1_000 * Double(k * 441 + $0) / 44_100)) }
            packets += try tone.withUnsafeBufferPointer { try e.encode($0) }
        }
        #expect(abs(e.nextTime - (t0 + 1)) < 1e-9, "a second of input: \(e.nextTime - t0)")
        packets += try e.flush()
        #expect(packets.count >= 100 && packets.dropLast().allSatisfy { $0.samples == 480 }, "\(packets.map(\.samples))")
        for (a, b) in zip(packets, packets.dropFirst()) { #expect(abs(b.time - a.time - 0.01) < 1e-6) }
        #expect(packets.allSatisfy { !$0.bytes.isEmpty })
    }

    /// Opus (libopus, WebRTC's): 10 ms packets (half libopus's default: 10 ms less latency),
    /// the first one the encoder's look-ahead early, then back to back; and only Opus's rates.
    @Test func opusPacketsAre10msAndCarryTheirCaptureTime() throws {
        #expect(AudioTrackInfo.opus(sampleRate: 44_100, channels: 1) == nil)
        #expect(AudioTrackInfo.opus(sampleRate: 48_000, channels: 2)?.codec == .opus)
        #expect(throws: MovieError.self) { try AudioEncoder(.opus, sampleRate: 44_100, channels: 1, anchor: 0) }
        let t0 = 1_700_000_000.5
        let e = try AudioEncoder(.opus, sampleRate: 48_000, channels: 1, anchor: t0)
        var packets: [AudioPacket] = []
        let tone = (0..<480).map { Int16(8_000 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) }
        for _ in 0..<100 { packets += try tone.withUnsafeBufferPointer { try e.encode($0) } }
        packets += try e.flush()
        #expect(packets.count >= 100 && packets.dropLast().allSatisfy { $0.samples == 480 }, "\(packets.map(\.samples))")
        let lead = t0 - packets[0].time
        #expect(lead >= 0 && lead < 0.01, "the look-ahead: \(lead * 1000) ms")
        for (a, b) in zip(packets, packets.dropFirst()) { #expect(abs(b.time - a.time - 0.01) < 1e-6) }
        #expect(packets.allSatisfy { !$0.bytes.isEmpty } && e.info.extradata.isEmpty)
    }

    /// A 3 s movie whose microphone beeps at 1 s and 2 s of capture time (from the first
    /// frame) and started half a second before it: the beeps decode at 1 s and 2 s of movie
    /// time, the sound before the first frame is left out, and the track ends with the picture.
    /// At 37.8 kHz (a rate AAC has no index for) the microphone is resampled to 48 kHz by
    /// libswresample, and its beeps still play at their capture time.
    @Test(arguments: [48_000, 37_800]) func theSoundTrackPlaysAtItsCaptureTime(inputRate rate: Int) async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let t0 = 1_700_000_000.0
        let track = try #require(AudioTrackInfo.forInput(.aac, sampleRate: rate, channels: 1))
        #expect(track.sampleRate == 48_000)
        var setup = MovieRecorder.Setup(id: "1000-cam", camera: "cam", format: format, orientation: .identity,
                                        options: RecordingOptions(), preset: "ultrafast", jpegQuality: 90)
        setup.audio = track
        let r = try MovieRecorder(setup, store: store, pool: EncodePool(threads: 1, name: "movie"), onEnd: { _ in })
        #expect(r.hasAudio)
        let encoder = try AudioEncoder(.aac, sampleRate: track.sampleRate, channels: 1, anchor: t0 - 0.5, inputRate: rate)
        var fed = 0  // samples from t0 - 0.5
        func sound(until t: Double) throws {
            let end = Int(((t - (t0 - 0.5)) * Double(rate)).rounded())
            guard end > fed else { return }
            let chunk = (fed..<end).map { n -> Int16 in
                let s = Double(n) / Double(rate) - 0.5  // seconds from t0
                let beep = [1.0, 2.0].contains { s >= $0 && s < $0 + 0.01 }
                return beep ? Int16(16_384 * sin(2 * .pi * 2_000 * (s - s.rounded(.down)))) : 0
            }
            fed = end
            for p in try chunk.withUnsafeBufferPointer({ try encoder.encode($0) }) { r.submit(audio: p) }
        }
        for i in 0..<90 {
            let t = t0 + Double(i) / 30
            try sound(until: t + 0.05)  // the sound a little ahead of the picture, as it comes
            try await r.offerAndWait(yuyvFrame(width: 320, height: 240, index: i), format: format, at: t)
        }
        try sound(until: t0 + 3.5)
        r.finish(.stopped)
        let movie = try #require(await r.outcome().movie)
        #expect(movie.audio == MovieAudio(codec: "aac", sampleRate: 48_000, channels: 1))
        let path = store.path(movie.id)
        let streams = try JSONSerialization.jsonObject(with: try await run("/usr/bin/ffprobe", [
            "-v", "error", "-show_entries", "stream=codec_type,codec_name,sample_rate,channels,duration", "-of", "json", path]))
        let audio = try #require(((streams as? [String: Any])?["streams"] as? [[String: Any]])?.first { $0["codec_type"] as? String == "audio" })
        #expect(audio["codec_name"] as? String == "aac" && audio["sample_rate"] as? String == "48000" && audio["channels"] as? Int == 1)
        let duration = Double(audio["duration"] as? String ?? "") ?? -1
        #expect(duration > 2.9 && duration <= 3.03, "the track ends with the picture (3 s): \(duration)")
        // Decoded from the movie's time 0, each packet at its time (silence where there is none:
        // the muxer starts a track at 0 by stretching its first packet, so the second follows a gap).
        let pcm = try await run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:0", "-af", "aresample=async=1:min_hard_comp=0.001:first_pts=0",
                                                    "-f", "s16le", "-ac", "1", "-"])
        let onsets = beepOnsets(pcm, rate: 48_000)
        #expect(onsets.count == 2, "onsets \(onsets)")
        for (onset, expected) in zip(onsets, [1.0, 2.0]) {
            #expect(abs(onset - expected) < 0.002, "a beep captured at \(expected) s plays at \(onset) s")
        }
    }
}

/// Where each beep starts (seconds from the first sample): the first sample above a quarter of
/// full scale after at least 0.1 s below it.
func beepOnsets(_ pcm: Data, rate: Int) -> [Double] {
    var onsets: [Double] = []
    var quietSince = 0
    pcm.withUnsafeBytes { raw in
        let samples = raw.bindMemory(to: Int16.self)
        for (i, v) in samples.enumerated() {
            if abs(Int(v)) > 8_192 {
                if i - quietSince > rate / 10 { onsets.append(Double(i) / Double(rate)) }
                quietSince = i
            }
        }
    }
    return onsets
}

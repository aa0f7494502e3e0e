import CameraCore
import Foundation
import JPEG
import Movie
import Testing

/// The recorder against real libx264/libavformat files, read back by ffprobe and ffmpeg.
@Suite struct MovieRecorderTests {
    let format = VideoFormat(pixelFormat: .yuyv, width: 320, height: 240, fps: 30)

    func recorder(_ options: RecordingOptions = RecordingOptions(), store: MovieStore, id: String = "1000-cam",
                  orientation: FrameTransform = .identity, probe: EndProbe = EndProbe(),
                  format: VideoFormat? = nil) throws -> MovieRecorder {
        try MovieRecorder(.init(id: id, camera: "cam", format: format ?? self.format, orientation: orientation,
                                options: options, preset: "ultrafast", jpegQuality: 90),
                          store: store, pool: EncodePool(threads: 1, name: "movie"), onEnd: probe.handler)
    }

    @Test func h264KeepsCaptureTimeAcrossDroppedFrames() async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let probe = EndProbe()
        let r = try recorder(store: store, probe: probe)
        // 3 s at 30 fps with half a second of frames never captured: the movie still lasts 3 s.
        let t0 = 1_700_000_000.0
        var offered = 0
        for i in 0..<90 where !(30..<45).contains(i) {
            try await r.offerAndWait(yuyvFrame(width: 320, height: 240, index: i), format: format, at: t0 + Double(i) / 30)
            offered += 1
        }
        r.finish(.stopped)
        let outcome = await r.outcome()
        let movie = try #require(outcome.movie)
        #expect(outcome.reason == .stopped && probe.outcome.withLock { $0 } == outcome)
        #expect(movie.frames == offered && movie.codec == .h264 && movie.width == 320 && movie.height == 240)
        #expect(abs(movie.duration - 3.0) < 0.001, "last frame at 89/30 s plus one frame: \(movie.duration)")
        let p = try await Probe.of(store.path(movie.id))
        #expect(p.codec == "h264" && p.width == 320 && p.height == 240 && p.frames == offered)
        #expect(abs(p.duration - 3.0) < 0.05, "ffprobe: \(p.duration)")
        #expect(store.list().map(\.id) == [movie.id])
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted() == [movie.id + ".json", movie.id + ".mp4"])
    }

    @Test func aFullQueueDropsAndCountsNeverWaits() async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let r = try recorder(store: store)
        let frame = yuyvFrame(width: 320, height: 240, index: 0)
        let t0 = 1_700_000_000.0
        let start = Date()
        for i in 0..<40 { r.offer(frame, format: format, at: t0 + Double(i) / 30) }  // a burst, no waiting
        let offerTime = Date().timeIntervalSince(start)
        r.finish(.stopped)
        let outcome = await r.outcome()
        let movie = try #require(outcome.movie)
        let s = r.status
        #expect(s.dropped > 0 && movie.frames + s.dropped == 40, "frames \(movie.frames), dropped \(s.dropped)")
        #expect(offerTime < 1.0, "offering 40 frames took \(offerTime) s: the capture thread must not wait for the encoder")
        #expect(try await Probe.of(store.path(movie.id)).frames == movie.frames)
    }

    @Test func intervalTimelapseTakesOneFrameAnIntervalAndPlaysAtItsRate() async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let r = try recorder(RecordingOptions(timelapse: Timelapse(trigger: .interval, interval: 1, fps: 10)), store: store)
        let t0 = 1_700_000_000.0
        for i in 0..<(30 * 10) {  // 10 s of capture at 30 fps
            try await r.offerAndWait(yuyvFrame(width: 320, height: 240, index: i), format: format, at: t0 + Double(i) / 30)
        }
        r.finish(.stopped)
        let movie = try #require(await r.outcome().movie)
        #expect(movie.frames == 10 && movie.timelapse)
        #expect(abs(movie.duration - 1.0) < 0.001, "10 frames at 10 fps: \(movie.duration)")
        let p = try await Probe.of(store.path(movie.id))
        #expect(p.frames == 10 && abs(p.duration - 1.0) < 0.05)
    }

    @Test func apiTimelapseTakesAFrameWhenAsked() async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let r = try recorder(RecordingOptions(timelapse: Timelapse(trigger: .api, interval: nil, fps: 30)), store: store)
        let t0 = 1_700_000_000.0
        var i = 0
        for _ in 0..<3 {
            r.requestFrame()
            for _ in 0..<5 { try await r.offerAndWait(yuyvFrame(width: 320, height: 240, index: i), format: format, at: t0 + Double(i)); i += 1 }
        }
        r.finish(.stopped)
        let movie = try #require(await r.outcome().movie)
        #expect(movie.frames == 3 && r.status.dropped == 0)
        #expect(try await Probe.of(store.path(movie.id)).frames == 3)
    }

    @Test func maxDurationEndsTheMovieByItself() async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let probe = EndProbe()
        let r = try recorder(RecordingOptions(maxDuration: 1), store: store, probe: probe)
        let t0 = 1_700_000_000.0
        for i in 0..<60 where r.status.active && !(probe.outcome.withLock { $0 != nil }) {
            try await r.offerAndWait(yuyvFrame(width: 320, height: 240, index: i), format: format, at: t0 + Double(i) / 30)
        }
        let outcome = await r.outcome()  // no finish(): it ended by itself
        #expect(outcome.reason == .maxDuration)
        let movie = try #require(outcome.movie)
        #expect(movie.frames == 30 && abs(movie.duration - 1.0) < 0.001, "\(movie.frames) frames, \(movie.duration) s")
        #expect(abs(try await Probe.of(store.path(movie.id)).duration - 1.0) < 0.05)
    }

    @Test func maxBytesEndsTheMovieBeforeItsFilePassesTheLimit() async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let r = try recorder(RecordingOptions(maxBytes: 200_000, codec: .mjpeg), store: store)
        let t0 = 1_700_000_000.0
        for i in 0..<300 where r.status.active {
            try await r.offerAndWait(yuyvFrame(width: 320, height: 240, index: i), format: format, at: t0 + Double(i) / 30)
        }
        let outcome = await r.outcome()
        #expect(outcome.reason == .maxBytes)
        let movie = try #require(outcome.movie)
        #expect(movie.bytes <= 200_000 && movie.bytes > 100_000, "\(movie.bytes) bytes")
        #expect(try await Probe.of(store.path(movie.id)).frames == movie.frames)
    }

    @Test func anMJPEGCamerasFramesGoIntoTheFileUntouched() async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let mjpeg = VideoFormat(pixelFormat: .mjpeg, width: 320, height: 240, fps: 30)
        let r = try recorder(RecordingOptions(codec: .mjpeg), store: store, format: mjpeg)
        let encoder = try JPEGEncoder()
        var jpegs: [[UInt8]] = []
        for i in 0..<10 {
            let raw = yuyvFrame(width: 320, height: 240, index: i)
            let jpeg = try raw.withUnsafeBytes { try encoder.encodeYUYV($0, width: 320, height: 240, stride: 640, quality: 80) }
            jpegs.append(jpeg)
            try await r.offerAndWait(jpeg, format: mjpeg, at: 1_700_000_000 + Double(i) / 30)
        }
        r.finish(.stopped)
        let movie = try #require(await r.outcome().movie)
        #expect(movie.codec == .mjpeg && movie.frames == 10)
        // The packets, copied out by ffmpeg, are the camera's bytes exactly.
        let out = temporaryDirectory("frames")
        _ = try await run("/usr/bin/ffmpeg", ["-v", "error", "-i", store.path(movie.id), "-c", "copy", "-f", "image2", out + "/f%03d.jpg"])
        for (i, jpeg) in jpegs.enumerated() {
            let copied = try #require(FileManager.default.contents(atPath: out + String(format: "/f%03d.jpg", i + 1)))
            #expect([UInt8](copied) == jpeg, "frame \(i)")
        }
    }

    @Test func orientationIsTheFilesDisplayMatrixAndZoomCropsThePixels() async throws {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let r = try recorder(store: store, orientation: FrameTransform(rotation: 90))
        // Centre quarter red (BT.601 Y 81, U 90, V 240); zoom 2 keeps only the centre quarter.
        let frame = yuyvFrame(width: 320, height: 240, index: 0, centre: (81, 90, 240))
        for i in 0..<3 { try await r.offerAndWait(frame, format: format, at: 1_700_000_000 + Double(i) / 30, zoom: i == 2 ? 2 : 1) }
        r.finish(.stopped)
        let movie = try #require(await r.outcome().movie)
        #expect(movie.rotation == 90)
        let p = try await Probe.of(store.path(movie.id))
        #expect(p.rotation == -90, "ffprobe's rotation is anticlockwise, as for an iPhone's portrait movie: \(String(describing: p.rotation))")
        // The track matrix itself, as QuickTime and iPhones write 90° clockwise: {0, 1, -1, 0}.
        let file = [UInt8](try #require(FileManager.default.contents(atPath: store.path(movie.id))))
        let tkhd = try #require(file.indices.dropLast(4).first { file[$0] == 0x74 && file[$0 + 1] == 0x6B && file[$0 + 2] == 0x68 && file[$0 + 3] == 0x64 })
        let matrixStart = tkhd + 4 + (file[tkhd + 4] == 1 ? 36 : 24) + 16
        let matrix: [Int32] = (0..<4).map { (i: Int) -> Int32 in
            let at = matrixStart + i * 4
            return file[at..<(at + 4)].reduce(Int32(0)) { (word: Int32, byte: UInt8) -> Int32 in word << 8 | Int32(byte) }
        }
        #expect(matrix == [0, 1 << 16, 0, -(1 << 16)], "a, b, u, c of the tkhd matrix: \(matrix)")
        #expect(p.width == 320 && p.height == 240, "the pixels are not turned; the player turns them")
        // Decoded as coded (-noautorotate): the pixels themselves.
        func corner(_ n: Int) async throws -> (Int, Int, Int) {
            let rgb = try await run("/usr/bin/ffmpeg", ["-v", "error", "-noautorotate", "-i", store.path(movie.id), "-vf", "select=eq(n\\,\(n))",
                                                   "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
            let o = (10 * 320 + 10) * 3
            return (Int(rgb[o]), Int(rgb[o + 1]), Int(rgb[o + 2]))
        }
        let plain = try await corner(0), zoomed = try await corner(2)
        #expect(plain.0 < 120, "unzoomed corner is the grey ramp: \(plain)")
        #expect(zoomed.0 > 180 && zoomed.1 < 80 && zoomed.2 < 80, "zoomed 2×, the corner is the red centre: \(zoomed)")
    }
}

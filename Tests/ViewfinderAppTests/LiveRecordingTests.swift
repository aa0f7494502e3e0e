// A recording started while live clients watch shares the live encode when its settings are
// the live encoder's (issue 27, item 1): the movie holds the live stream's access units — the
// live encoder's Main profile where the movie's own encoder writes High — plays whole, and
// keeps a keyframe a second; without a live client, or with another preset, the movie encodes
// its own frames. A turn by 90° restarts the live stream and ends the shared movie.

import Foundation
import Testing
@testable import ViewfinderApp

@Suite struct LiveRecordingTests {
    /// ffprobe's profile, frame count and keyframe count of a movie.
    static func probe(_ path: String) async throws -> (profile: String, frames: Int, keyframes: Int) {
        let s = try await LiveMP4Tests.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                          "stream=profile", "-of", "csv=p=0", path])
        let keys = try await LiveMP4Tests.keyFrames(path)
        return (s.out.trimmingCharacters(in: .whitespacesAndNewlines), keys.count, keys.filter { $0 == "1" }.count)
    }

    /// Records ~2 s: the movie's path and the stop answer.
    static func record(_ app: Application, _ port: Int) async throws -> (path: String, movie: [String: Any]) {
        let start = try await fetch(port, "POST", "/api/session/recording/start")
        #expect(start.status == 200, "\(start.text)")
        _ = try await eventually(timeout: 15) {
            ((try await fetch(port, "/api/session").json as? [String: Any])?["recording"] as? [String: Any])?["frames"] as? Int ?? 0 >= 60
        }
        let stop = try await fetch(port, "POST", "/api/session/recording/stop")
        let movie = try #require(stop.json as? [String: Any])
        let id = try #require(movie["id"] as? String)
        return (app.configuration.recording.directory + "/\(id).mp4", movie)
    }

    @Test func aMovieRecordedWhileALiveClientWatchesIsTheLiveStream() async throws {
        try await withServer({ $0.recording.preset = "superfast" }) { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/live.mp4")
            try await viewer.read(timeout: 20) { LiveMP4Tests.boxes($0).contains { $0.type == "mdat" } }
            let (path, movie) = try await Self.record(app, port)
            let p = try await Self.probe(path)
            #expect(p.profile == "Main", "the live encoder's profile (the movie's own encoder writes High): \(p.profile)")
            #expect(p.frames >= 55 && p.frames == movie["frames"] as? Int, "\(p.frames) frames, the answer says \(movie["frames"] ?? "-")")
            #expect(p.keyframes >= 2, "a keyframe a second: \(p.keyframes) in \(p.frames) frames")
            // Capture times as they are (-enc_time_base -1): a capture late under load shares a
            // 1/30 s slot with the next, which the null muxer reports though nothing failed to decode.
            let decode = try await LiveMP4Tests.run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-enc_time_base", "-1", "-f", "null", "-"])
            #expect(decode.status == 0 && decode.err.isEmpty, "every frame decodes: \(decode.err)")
        }
    }

    @Test func withoutALiveClientOrWithAnotherPresetTheMovieEncodesItsOwn() async throws {
        try await withServer({ $0.recording.preset = "superfast" }) { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            #expect(try await Self.probe(try await Self.record(app, port).path).profile == "High")
        }
        try await withServer({ $0.recording.preset = "ultrafast" }) { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/live.mp4")
            try await viewer.read(timeout: 20) { LiveMP4Tests.boxes($0).contains { $0.type == "mdat" } }
            #expect(try await Self.probe(try await Self.record(app, port).path).profile != "Main")
        }
    }

    /// Found by Tests/state/test_kill.py: with a live client watching (the motion recording's
    /// ring is one), a recording started at once after a stop and a start shared the last run's
    /// stream, ended `formatChanged` when the new run's encoder started, and left no movie.
    @Test func aRecordingStartedAsTheCameraStartsAgainIsKept() async throws {
        try await withServer({ $0.recording.preset = "superfast" }) { app, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/live.mp4")
            try await viewer.read(timeout: 20) { LiveMP4Tests.boxes($0).contains { $0.type == "mdat" } }
            _ = try await fetch(port, "POST", "/api/session/stop")
            _ = try await fetch(port, "POST", "/api/session/start")
            let (path, movie) = try await Self.record(app, port)
            #expect(movie["reason"] as? String == "stopped", "ended by the stop, not by the new run's stream: \(movie)")
            #expect(try await Self.probe(path).frames >= 55, "the movie holds what was recorded")
        }
    }

    @Test func aTurnThatRestartsTheLiveStreamEndsTheSharedMovie() async throws {
        try await withServer({ $0.recording.preset = "superfast" }) { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/live.mp4")
            try await viewer.read(timeout: 20) { LiveMP4Tests.boxes($0).contains { $0.type == "mdat" } }
            #expect(try await fetch(port, "POST", "/api/session/recording/start").status == 200)
            let events = try TestConnection(port: port)
            try events.request("GET", "/api/events")
            _ = try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": 90}"#)
            try await events.read(timeout: 15) { String(decoding: $0, as: UTF8.self).contains(#""reason":"formatChanged""#) }
            #expect(events.text.contains(#""event":"finished""#))
        }
    }
}

import CaptureTestSupport
import Foundation
import HTTPServer
import Testing
@testable import ViewfinderApp

/// The movie output over HTTP, on the running server with the synthetic camera: files read
/// back by ffprobe, byte ranges to the byte, bad input refused with nothing changed.
@Suite struct MovieAPITests {
    func recording(_ port: Int, _ path: String = "/api/session") async throws -> [String: Any] {
        try #require((try await fetch(port, path).json as? [String: Any])?["recording"] as? [String: Any])
    }

    func code(_ r: TestConnection) -> String? { (r.json as? [String: [String: Any]])?["error"]?["code"] as? String }

    /// Waits (bounded) until the recording has written `frames` frames.
    func waitForFrames(_ port: Int, _ frames: Int, path: String = "/api/session") async throws {
        let ok = try await eventually(timeout: 15) { (try await recording(port, path)["frames"] as? Int ?? 0) >= frames }
        #expect(ok, "the recording never reached \(frames) frames")
    }

    @Test func startStopGivesAPlayableH264MovieAndEvents() async throws {
        try await withServer { app, port in
            let events = try TestConnection(port: port)
            try events.request("GET", "/api/events")
            try await events.read { String(decoding: $0, as: UTF8.self).contains("\n\n") }

            let asked = Date()  // before the start: the movie cannot be longer than since then
            let start = try await fetch(port, "POST", "/api/session/recording/start")
            let started = Date()
            #expect(start.status == 200)
            let rec = try #require((start.json as? [String: Any])?["recording"] as? [String: Any])
            #expect(rec["active"] as? Bool == true && rec["codec"] as? String == "h264")
            let id = try #require(rec["id"] as? String)
            #expect(id.hasSuffix("-rear"))
            try await events.read { String(decoding: $0, as: UTF8.self).contains("event: recording") }
            #expect(events.text.contains(#"event: recording"#) && events.text.contains(#""event":"started""#))

            #expect(code(try await fetch(port, "POST", "/api/session/recording/start")) == "already_recording")
            #expect(code(try await fetch(port, "POST", "/api/session/recording/frame")) == "not_api_timelapse")
            try await waitForFrames(port, 45)
            let wall = Date().timeIntervalSince(started)  // from start's answer to stop's request
            let stop = try await fetch(port, "POST", "/api/session/recording/stop")
            let outer = Date().timeIntervalSince(asked)  // from start's request to stop's answer
            #expect(stop.status == 201)
            #expect(stop.headers["location"] == "/api/movies/\(id)")
            let movie = try #require(stop.json as? [String: Any])
            #expect(movie["id"] as? String == id && movie["camera"] as? String == "rear" && movie["reason"] as? String == "stopped")
            #expect(movie["width"] as? Int == 352 && movie["height"] as? Int == 288)
            let duration = try #require(movie["duration"] as? Double), frames = try #require(movie["frames"] as? Int)

            // The file on disk is what the answer says, and ffprobe agrees.
            let path = app.configuration.recording.directory + "/\(id).mp4"
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.size] as? Int) == movie["bytes"] as? Int)
            let probe = try await ffprobe(path)
            #expect(probe.codec == "h264" && probe.width == 352 && probe.height == 288)
            #expect(probe.frames == frames)
            #expect(abs(probe.duration - duration) < 0.1)
            // No longer than from start's request to stop's answer, and no shorter than from
            // start's answer to stop's request, less the wait for its first frame: on a loaded
            // machine the answers themselves took seconds, so the two bounds, not one clock.
            #expect(duration < outer + 0.1 && duration > wall - 1.0, "movie \(duration) s, wall clock \(wall)…\(outer) s")
            // Most of the camera's frames (a recorder keeping up), not a frame rate: beside the
            // suite's other recordings a loaded machine dropped one of 46 (45 < 45.009).
            #expect(Double(frames) >= 0.8 * 30 * duration, "\(frames) frames in \(duration) s at 30 fps")

            try await events.read { String(decoding: $0, as: UTF8.self).contains(#""event":"finished""#) }
            #expect(events.text.contains(#""reason":"stopped""#))
            #expect((try await recording(port))["active"] as? Bool == false)
            #expect(code(try await fetch(port, "POST", "/api/session/recording/stop")) == "not_recording")

            let list = try #require((try await fetch(port, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])
            #expect(list.map { $0["id"] as? String } == [id])
            let metrics = try await fetch(port, "/metrics").text
            #expect(metrics.contains(#"viewfinder_recording_active{camera="rear"} 0"#))
        }
    }

    @Test func rangesAreServedToTheByte() async throws {
        try await withServer { app, port in
            _ = try await fetch(port, "POST", "/api/session/recording/start", body: #"{"maxDuration": 1}"#)
            let done = try await eventually(timeout: 15) { (try await recording(port))["active"] as? Bool == false }
            #expect(done, "maxDuration ended it")
            let id = try #require(((try await fetch(port, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])?.first?["id"] as? String)
            #expect(((try await fetch(port, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])?.first?["reason"] as? String == "maxDuration")
            let file = [UInt8](try #require(FileManager.default.contents(atPath: app.configuration.recording.directory + "/\(id).mp4")))
            let size = file.count

            let whole = try await fetch(port, "/api/movies/\(id)")
            #expect(whole.status == 200 && whole.body == file)
            #expect(whole.headers["content-type"] == "video/mp4" && whole.headers["accept-ranges"] == "bytes")

            for (range, first, last) in [("bytes=0-99", 0, 99), ("bytes=100-", 100, size - 1), ("bytes=-500", size - 500, size - 1),
                                         ("bytes=10-\(size + 1000)", 10, size - 1)] {
                let r = try await fetch(port, "/api/movies/\(id)", headers: ["Range": range])
                #expect(r.status == 206, "\(range)")
                #expect(r.headers["content-range"] == "bytes \(first)-\(last)/\(size)", "\(range)")
                #expect(r.body == Array(file[first...last]), "\(range)")
            }
            let past = try await fetch(port, "/api/movies/\(id)", headers: ["Range": "bytes=\(size)-"])
            #expect(past.status == 416 && past.headers["content-range"] == "bytes */\(size)" && code(past) == "range_not_satisfiable")
            let several = try await fetch(port, "/api/movies/\(id)", headers: ["Range": "bytes=0-1,5-9"])
            #expect(several.status == 200 && several.body == file)

            let head = try await fetch(port, "HEAD", "/api/movies/\(id)")
            #expect(head.status == 200 && head.headers["content-length"] == "\(size)" && head.headers["content-type"] == "video/mp4")

            #expect(try await fetch(port, "DELETE", "/api/movies/\(id)").status == 204)
            #expect(code(try await fetch(port, "/api/movies/\(id)")) == "unknown_movie")
            #expect(!FileManager.default.fileExists(atPath: app.configuration.recording.directory + "/\(id).json"))
        }
    }

    @Test(arguments: ["..%2F..%2Fconfig.json", "%2e%2e", "1-..", "abc", "1-.x", "%00", "1-a%2Fb"])
    func movieIdsCannotEscapeTheDirectory(_ id: String) async throws {
        try await withServer { _, port in
            for method in ["GET", "DELETE"] {
                let r = try await fetch(port, method, "/api/movies/\(id)")
                #expect(r.status == 404 && code(r) == "unknown_movie", "\(method) \(id)")
            }
        }
    }

    @Test(arguments: [#"{"maxDuration": -1}"#, #"{"maxDuration": "10"}"#, #"{"maxBytes": 1.5}"#, #"{"maxBytes": 100}"#,
                      #"{"codec": "vp9"}"#, #"{"timelapse": {}}"#, #"{"timelapse": {"interval": 0}}"#,
                      #"{"timelapse": {"trigger": "api", "interval": 5}}"#, #"{"timelapse": {"interval": 1, "fps": 500}}"#,
                      #"{"timelapse": {"interval": 1, "speed": 2}}"#, #"{"colour": 1}"#, "[1]", "{"])
    func badOptionsAreRefusedAndNothingStarts(_ body: String) async throws {
        try await withServer { _, port in
            let r = try await fetch(port, "POST", "/api/session/recording/start", body: body)
            #expect(r.status == 400, "\(body) → \(r.status)")
            #expect(["invalid_value", "invalid_json"].contains(code(r) ?? ""), "\(body)")
            #expect((try await recording(port))["active"] as? Bool == false)
        }
    }

    @Test func aStoppedSessionCannotRecord() async throws {
        try await withServer { _, port in
            _ = try await fetch(port, "POST", "/api/session/stop")
            let r = try await fetch(port, "POST", "/api/session/recording/start")
            #expect(r.status == 409 && code(r) == "session_not_running")
        }
    }

    @Test func prepareEndsTheMovieAsFormatChangedAndKeepsIt() async throws {
        try await withServer { _, port in
            _ = try await fetch(port, "POST", "/api/session/recording/start")
            try await waitForFrames(port, 20)
            let events = try TestConnection(port: port)
            try events.request("GET", "/api/events")
            // Subscribed once its first state is in: a prepare before that would end the movie unseen.
            try await events.read { String(decoding: $0, as: UTF8.self).contains("event: state") }
            _ = try await fetch(port, "POST", "/api/session/prepare", body: #"{"preset": "640x480"}"#)
            try await events.read { String(decoding: $0, as: UTF8.self).contains(#""event":"finished""#) }
            #expect(events.text.contains(#""reason":"formatChanged""#))
            let movies = try #require((try await fetch(port, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])
            #expect(movies.count == 1 && movies.first?["reason"] as? String == "formatChanged" && movies.first?["width"] as? Int == 352)
            #expect((try await recording(port))["active"] as? Bool == false, "the new format is not recorded until asked")
        }
    }

    @Test func eachCameraRecordsOnItsOwnPathAndATimelapseTakesFramesOnRequest() async throws {
        try await withServer { app, port in
            _ = try await fetch(port, "POST", "/api/cameras/front/session/start")
            let front = "/api/cameras/front/session"
            let start = try await fetch(port, "POST", front + "/recording/start", body: #"{"timelapse": {"trigger": "api", "fps": 5}}"#)
            #expect(start.status == 200)
            _ = try await fetch(port, "POST", "/api/session/recording/start")  // the main (rear) one, at the same time
            for n in 1...3 {
                #expect(try await fetch(port, "POST", front + "/recording/frame").status == 200)
                try await waitForFrames(port, n, path: front)
            }
            let stop = try await fetch(port, "POST", front + "/recording/stop")
            let movie = try #require(stop.json as? [String: Any])
            #expect(stop.status == 201 && movie["camera"] as? String == "front" && movie["frames"] as? Int == 3 && movie["timelapse"] as? Bool == true)
            #expect(abs((movie["duration"] as? Double ?? 0) - 0.6) < 0.001, "3 frames at 5 fps")
            #expect((try await recording(port))["active"] as? Bool == true, "the rear camera records on")
            let rear = try #require(try await fetch(port, "POST", "/api/session/recording/stop").json as? [String: Any])
            #expect(rear["camera"] as? String == "rear")
            let id = try #require(movie["id"] as? String)
            #expect(try await ffprobe(app.configuration.recording.directory + "/\(id).mp4").frames == 3)
        }
    }

    /// The recording switch (Home Assistant's, over MQTT or HTTP) says what it wants: two
    /// "on"s or two "off"s that cross each other both answer the state (an MQTT command sent
    /// again while the first was ending the movie got 409 `not_recording` first).
    @Test func theSwitchIsIdempotentWhenTwoCommandsCross() async throws {
        try await withServer { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            async let a = fetch(port, "POST", "/api/session/recording", body: #"{"active": true}"#)
            async let b = fetch(port, "POST", "/api/session/recording", body: #"{"active": true}"#)
            let (on1, on2) = try await (a, b)
            #expect(on1.status == 200 && on2.status == 200, "\(on1.status) \(on1.text) / \(on2.status) \(on2.text)")
            async let c = fetch(port, "POST", "/api/session/recording", body: #"{"active": false}"#)
            async let d = fetch(port, "POST", "/api/session/recording", body: #"{"active": false}"#)
            let (off1, off2) = try await (c, d)
            #expect(off1.status == 200 && off2.status == 200, "\(off1.status) \(off1.text) / \(off2.status) \(off2.text)")
            let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect((state["recording"] as? [String: Any])?["active"] as? Bool == false)
        }
    }

    @Test func stoppingTheSessionEndsTheRecordingAndKeepsTheMovie() async throws {
        try await withServer { _, port in
            _ = try await fetch(port, "POST", "/api/session/recording/start", body: #"{"codec": "mjpeg"}"#)
            try await waitForFrames(port, 10)
            _ = try await fetch(port, "POST", "/api/session/stop")
            let ended = try await eventually(timeout: TestTime.patience) {
                ((try await fetch(port, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])?.count == 1
            }
            #expect(ended)
            let m = try #require(((try await fetch(port, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])?.first)
            #expect(m["codec"] as? String == "mjpeg" && m["reason"] as? String == "stopped" && (m["frames"] as? Int ?? 0) >= 10)
        }
    }
}

struct FFprobeFacts {
    var codec: String, width: Int, height: Int, frames: Int, duration: Double
}

/// ffprobe's reading of a movie (frames counted by decoding), on a thread of its own.
func ffprobe(_ path: String) async throws -> FFprobeFacts {
    try await offload { try ffprobeBlocking(path) }
}

private func ffprobeBlocking(_ path: String) throws -> FFprobeFacts {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
    p.arguments = ["-v", "error", "-count_frames", "-select_streams", "v:0",
                   "-show_entries", "stream=codec_name,width,height,nb_read_frames:format=duration", "-of", "json", path]
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let s = try #require((json["streams"] as? [[String: Any]])?.first)
    return FFprobeFacts(codec: s["codec_name"] as? String ?? "", width: s["width"] as? Int ?? 0, height: s["height"] as? Int ?? 0,
                        frames: Int(s["nb_read_frames"] as? String ?? "") ?? -1,
                        duration: Double((json["format"] as? [String: Any])?["duration"] as? String ?? "") ?? -1)
}

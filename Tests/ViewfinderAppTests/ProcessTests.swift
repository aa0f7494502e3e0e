import CaptureTestSupport
import Foundation
import HTTPServer
import SystemSupport
import Testing
import Session

/// The built `viewfinder` executable, run as users run it.
@Suite(.serialized) struct ProcessTests {
    static var binary: String {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("viewfinder").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return packageRoot + "/.build/debug/viewfinder"
    }

    /// Starts viewfinder on port 0 and returns it with the port it printed.
    func launch(_ args: [String] = [], under wrapper: [String] = []) async throws -> (Process, Int, Pipe) {
        try await offload { try self.launchSync(args, under: wrapper) }
    }

    /// `wrapper`: a command that runs viewfinder (e.g. prlimit with its options).
    func launchSync(_ args: [String], under wrapper: [String] = []) throws -> (Process, Int, Pipe) {
        let p = Process()
        let command = wrapper + [Self.binary, "--port", "0", "--cameras", "synthetic", "--preset", "352x288",
                                 "--public-directory", packageRoot + "/Public", "--log-level", "warning"] + args
        p.executableURL = URL(fileURLWithPath: command[0])
        p.arguments = Array(command.dropFirst())
        // A directory of its own: the saved state (state/, relative) is this process's alone.
        let cwd = NSTemporaryDirectory() + "vf-process-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        p.currentDirectoryURL = URL(fileURLWithPath: cwd)
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // The first stdout line names the port; read it with a deadline.
        let fd = out.fileHandleForReading.fileDescriptor
        var line = [UInt8]()
        let deadline = TestTime.deadline(30)
        while !line.contains(10) && Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 500) > 0 else { continue }
            var b = [UInt8](repeating: 0, count: 256)
            let n = read(fd, &b, 256)
            if n <= 0 { break }
            line += b[0..<n]
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let r = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(text[r].split(separator: ":")[1]) else {
            p.terminate()
            throw TestError("no port in: \(text)")
        }
        return (p, port, err)
    }

    @Test func sigtermEndsStreamsAndExitsZero() async throws {
        let (p, port, _) = try await launch()
        let viewer = try TestConnection(port: port)
        try viewer.request("GET", "/stream")
        try await viewer.read { Multipart.parse($0).parts.count >= 2 }
        kill(p.processIdentifier, SIGTERM)
        #expect(try await viewer.closedByPeer(timeout: TestTime.patience), "the stream ends")
        try #require(await waitForExit(p, timeout: ProcessTests.stopTimeout))
        #expect(p.terminationReason == .exit && p.terminationStatus == 0)
    }

    @Test func sigintExitsZero() async throws {
        let (p, port, _) = try await launch()
        #expect(try await fetch(port, "/healthz").status == 200)
        kill(p.processIdentifier, SIGINT)
        try #require(await waitForExit(p, timeout: ProcessTests.stopTimeout))
        #expect(p.terminationStatus == 0)
    }

    /// Runs viewfinder with `args` until it exits (bounded); returns its status and stderr.
    /// How long a SIGTERM or SIGINT may take: the unit's TimeoutStopSec. A stop right after
    /// start-up waits for WebRTC's warm-up (the process must not exit under its key pair,
    /// and a fresh GStreamer registry is built then), which took more than 10 s beside make
    /// test's parallel run on a fresh clone.
    static let stopTimeout = 20.0

    func runToExit(_ args: [String]) async throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = args
        let err = Pipe()
        p.standardError = err
        p.standardOutput = Pipe()
        try p.run()
        try #require(await waitForExit(p, timeout: 30), "viewfinder \(args) did not exit")
        let message = String(decoding: try await offload { err.fileHandleForReading.readDataToEndOfFile() }, as: UTF8.self)
        return (p.terminationStatus, message)
    }

    @Test func aBadConfigStopsStartUpNamingTheKey() async throws {
        let path = NSTemporaryDirectory() + "vf-bad-\(UUID().uuidString).json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(#"{"stream": {"quality": 101}}"#.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, message) = try await runToExit(["--config", path, "--port", "0"])
        #expect(status == 2)
        #expect(message.contains("stream.quality: 101 is outside 1…100"), "\(message)")
    }

    @Test func aBadFlagStopsStartUp() async throws {
        let (status, message) = try await runToExit(["--port", "0", "--preset", "enormous"])
        #expect(status == 2)
        #expect(message.contains("session.preset: unknown preset 'enormous'"), "\(message)")
        let (status2, message2) = try await runToExit(["--port", "0", "--fps", "0"])
        #expect(status2 == 2 && message2.contains("--fps"), "\(message2)")
    }

    /// A real client: Debian's ffprobe reads the stream as MJPEG at the configured size.
    @Test func ffprobeReadsTheStream() async throws {
        let (p, port, _) = try await launch()
        defer { p.terminate() }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-rw_timeout", "10000000", "-select_streams", "v:0",
                           "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0",
                           "http://127.0.0.1:\(port)/stream"]
        let out = Pipe()
        probe.standardOutput = out
        try probe.run()
        try #require(await waitForExit(probe, timeout: 60))
        let text = String(decoding: try await offload { out.fileHandleForReading.readDataToEndOfFile() }, as: UTF8.self)
        #expect(probe.terminationStatus == 0)
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,352,288")
    }

    /// A config file whose movies go to a directory of their own.
    func movieConfig(_ extra: String? = nil) -> (config: String, movies: String) {
        let dir = NSTemporaryDirectory() + "vf-proc-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let config = dir + "/config.json"
        FileManager.default.createFile(atPath: config, contents: Data("""
            {"recording": {"directory": "\(dir)/movies", "preset": "ultrafast"}, "capture": {"directory": "\(dir)/photos"}\(extra.map { ", " + $0 } ?? "")}
            """.utf8))
        return (config, dir + "/movies")
    }

    func recordingFrames(_ port: Int) async throws -> Int {
        ((try await fetch(port, "/api/session").json as? [String: Any])?["recording"] as? [String: Any])?["frames"] as? Int ?? 0
    }

    /// Pulling the plug mid-recording: SIGKILL leaves the movie unfinished; the next start
    /// repairs and lists it, playable to within a second and a half of the kill.
    @Test func aMovieSurvivesSIGKILL() async throws {
        let (config, movies) = movieConfig()
        let (p, port, _) = try await launch(["--config", config])
        let start = try await fetch(port, "POST", "/api/session/recording/start")
        #expect(start.status == 200)
        let id = try #require(((start.json as? [String: Any])?["recording"] as? [String: Any])?["id"] as? String)
        #expect(try await eventually(timeout: 20) { try await recordingFrames(port) >= 100 }, "3 s or more recorded")
        let recorded = Double(try await recordingFrames(port)) / 30
        kill(p.processIdentifier, SIGKILL)
        try #require(await waitForExit(p, timeout: ProcessTests.stopTimeout))
        #expect(FileManager.default.fileExists(atPath: "\(movies)/.\(id).mp4.part"), "left unfinished")

        let (again, port2, _) = try await launch(["--config", config])
        defer { again.terminate() }
        let list = try #require((try await fetch(port2, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])
        let movie = try #require(list.first)
        #expect(list.count == 1 && movie["id"] as? String == id && movie["reason"] as? String == "recovered")
        let probe = try await ffprobe("\(movies)/\(id).mp4")
        #expect(probe.codec == "h264" && probe.frames == movie["frames"] as? Int)
        #expect(probe.duration >= recorded - 1.5, "plays \(probe.duration) s of the \(recorded) s recorded before the kill")
        let served = try await fetch(port2, "/api/movies/\(id)", headers: ["Range": "bytes=0-7"])
        #expect(served.status == 206 && served.body.count == 8)
    }

    /// Pulling the plug mid-event: the event's movie (pre-roll and all) is repaired at the next
    /// start and listed as a motion movie, playable up to about a second before the kill.
    @Test func aMotionMovieSurvivesSIGKILL() async throws {
        let (config, movies) = movieConfig(#""motion": {"preRoll": 1, "postRoll": 30}"#)
        let (p, port, _) = try await launch(["--config", config])
        let events = try TestConnection(port: port)
        try events.request("GET", "/api/events?camera=rear")
        _ = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"moving": false}"#)
        _ = try await fetch(port, "POST", "/api/session/motion", body: #"{"enabled": true}"#)  // on a still scene
        #expect(try await eventually(timeout: 20) { try await MotionAPITests.preRollHeld(port) >= 1 })  // the ring holds the pre-roll
        _ = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"walker": {"duration": 3}}"#)
        try await events.read(timeout: 30) { String(decoding: $0, as: UTF8.self).contains("event: recording") }  // the event's movie started
        try await Task.sleep(nanoseconds: 3_000_000_000)  // the movie has fragments written
        kill(p.processIdentifier, SIGKILL)
        try #require(await waitForExit(p, timeout: ProcessTests.stopTimeout))

        let (again, port2, _) = try await launch(["--config", config])
        defer { again.terminate() }
        let list = try #require((try await fetch(port2, "/api/movies?trigger=motion").json as? [String: Any])?["movies"] as? [[String: Any]])
        let movie = try #require(list.first)
        #expect(list.count == 1 && movie["reason"] as? String == "recovered" && movie["trigger"] as? String == "motion", "\(list)")
        let id = try #require(movie["id"] as? String)
        let probe = try await ffprobe("\(movies)/\(id).mp4")
        #expect(probe.codec == "h264" && probe.duration >= 2, "plays \(probe.duration) s")
        #expect(!((try? FileManager.default.contentsOfDirectory(atPath: movies)) ?? []).contains { $0.hasSuffix(".motion") })
    }

    /// A full disk (here the file size limit: EFBIG) ends the movie as diskFull, keeps what
    /// was written, and the server goes on serving.
    @Test func aFullDiskEndsTheMovieAndKeepsWhatWasWritten() async throws {
        let (config, movies) = movieConfig()
        let limit = 4_000_000  // a few one-second fragments of 640x480 MJPEG
        let (p, port, _) = try await launch(["--config", config, "--preset", "640x480"], under: ["/usr/bin/prlimit", "--fsize=\(limit)"])
        defer { p.terminate() }
        let events = try TestConnection(port: port)
        try events.request("GET", "/api/events")
        let start = try await fetch(port, "POST", "/api/session/recording/start", body: #"{"codec": "mjpeg"}"#)
        #expect(start.status == 200)
        try await events.read(timeout: 30) { String(decoding: $0, as: UTF8.self).contains(#""event":"finished""#) }
        #expect(events.text.contains(#""reason":"diskFull""#), "\(events.text.suffix(600))")
        let list = try #require((try await fetch(port, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])
        let movie = try #require(list.first)
        let id = try #require(movie["id"] as? String)
        #expect(movie["reason"] as? String == "diskFull" && (movie["frames"] as? Int ?? 0) > 0)
        #expect((movie["bytes"] as? Int ?? .max) <= limit)
        #expect(try await ffprobe("\(movies)/\(id).mp4").frames == movie["frames"] as? Int)
        // Serving on, and the session untouched.
        #expect(try await fetch(port, "/healthz").status == 200)
        let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
        #expect(state["state"] as? String == "running" && (state["recording"] as? [String: Any])?["active"] as? Bool == false)
        #expect(p.isRunning)
    }

    /// Pulling the plug during a loop of stored captures (issue 15): every photo the server
    /// acknowledged survives, and the directory holds only whole JPEGs, each one listed (a
    /// photo is written to a hidden temporary file, synced and renamed before the answer).
    @Test func aKilledServerLeavesOnlyWholeListedPhotos() async throws {
        let (config, movies) = movieConfig()
        let photos = (movies as NSString).deletingLastPathComponent + "/photos"
        let (p, port, _) = try await launch(["--config", config, "--preset", "640x480"])
        let acknowledged = Locked<[String]>([])
        let loop = Task {
            // Until the kill: then the next request fails and the loop ends.
            for _ in 0..<2000 {
                guard let r = try? await fetch(port, "POST", "/api/session/capture?store=true"), r.status == 201,
                      let id = (r.json as? [String: Any])?["id"] as? String else { return }
                acknowledged.withLock { $0.append(id) }
            }
        }
        #expect(await eventually(timeout: 30) { acknowledged.withLock { $0.count } >= 20 }, "photos stored")
        kill(p.processIdentifier, SIGKILL)  // with a capture in flight, most likely mid-write
        try #require(await waitForExit(p, timeout: ProcessTests.stopTimeout))
        _ = await loop.value
        let stored = acknowledged.withLock { $0 }

        let files = try FileManager.default.contentsOfDirectory(atPath: photos)
        let jpegs = files.filter { $0.hasSuffix(".jpg") }
        for name in jpegs {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: photos + "/" + name)))
            #expect(bytes.prefix(2) == [0xFF, 0xD8] && bytes.suffix(2) == [0xFF, 0xD9], "\(name) is whole")
        }
        let (again, port2, _) = try await launch(["--config", config])
        defer { again.terminate() }
        let list = try #require((try await fetch(port2, "/api/photos").json as? [String: Any])?["photos"] as? [[String: Any]])
        let listed = Set(list.compactMap { $0["id"] as? String })
        #expect(Set(stored).isSubset(of: listed), "every acknowledged photo is listed: \(Set(stored).subtracting(listed))")
        #expect(listed == Set(jpegs.map { String($0.dropLast(4)) }), "every photo file is listed, and only those")
        let left = try FileManager.default.contentsOfDirectory(atPath: photos).filter { $0.hasPrefix(".tmp-") }
        #expect(left.isEmpty, "the restart removed the unfinished saves: \(left)")
        for id in stored.suffix(3) {
            #expect(try await fetch(port2, "/api/photos/\(id)").status == 200)
        }
    }
}

import CaptureTestSupport
import Foundation
import Testing

/// A real full disk: a tmpfs of a few MB, mounted in a user and mount namespace the server
/// runs in alone (`unshare`: no root needed, nothing mounted outside it). The movie is read
/// back over HTTP, as the disk is the server's namespace's alone.
extension ProcessTests {
    /// A movie with sound (the synthetic camera's microphone) that fills the disk ends
    /// `diskFull`, listed, and plays to its last frame with its sound: the disk is used to its
    /// end, the fragment being gathered when it filled included (room for every packet, its
    /// fragment and the file's end is reserved before the muxer gets it). Before, the
    /// fragment a write found the disk full in was lost, and with it, when it was the first
    /// (where a movie with sound writes its moov), the whole movie: file and listing.
    @Test(arguments: [("mjpeg", "640x480", 6, 4), ("h264", "1920x1080", 2, 0)])
    func aMovieWithSoundThatFillsTheDiskIsKeptToItsLastFrame(codec: String, preset: String, disk: Int, filler: Int) async throws {
        let dir = NSTemporaryDirectory() + "vf-full-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/disk", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = dir + "/config.json"
        try Data(#"{"recording": {"directory": "\#(dir)/disk/movies", "preset": "ultrafast"}, "capture": {"directory": "\#(dir)/photos"}}"#.utf8)
            .write(to: URL(fileURLWithPath: config))
        // The disk: `disk` MiB, `filler` of them taken before the server starts.
        let mount = #"mount -t tmpfs -o size=\#(disk)m tmpfs "$0" && head -c \#(filler << 20) /dev/zero > "$0/filler" && exec "$@""#
        let (p, port, _) = try await launch(["--config", config, "--preset", preset],
                                            under: ["/usr/bin/unshare", "--user", "--map-root-user", "--mount", "--",
                                                    "/bin/sh", "-c", mount, dir + "/disk"])
        defer { p.terminate() }
        let events = try TestConnection(port: port)
        try events.request("GET", "/api/events")
        let start = try await fetch(port, "POST", "/api/session/recording/start", body: #"{"codec": "\#(codec)"}"#)
        #expect(start.status == 200)
        try await events.read(timeout: 90) { String(decoding: $0, as: UTF8.self).contains(#""event":"finished""#) }
        #expect(events.text.contains(#""reason":"diskFull""#), "\(events.text.suffix(600))")

        let list = try #require((try await fetch(port, "/api/movies").json as? [String: Any])?["movies"] as? [[String: Any]])
        let movie = try #require(list.first, "the movie is listed")
        let id = try #require(movie["id"] as? String)
        let frames = movie["frames"] as? Int ?? 0, bytes = movie["bytes"] as? Int ?? 0
        #expect(movie["reason"] as? String == "diskFull" && frames > 0 && movie["audio"] != nil, "\(movie)")
        // Used to its end: short of the free space by less than a fragment's index and a frame
        // or two (a fragment lost to the full disk is a second: 1.2 MB of this MJPEG).
        let free = (disk - filler) << 20
        #expect(bytes > free - 512 * 1024 && bytes <= free, "\(bytes) bytes of \(free) free")

        let download = try await fetch(port, "/api/movies/\(id)")
        #expect(download.status == 200 && download.body.count == bytes)
        let file = dir + "/movie.mp4"
        try Data(download.body).write(to: URL(fileURLWithPath: file))
        let probe = try await ffprobe(file)
        #expect(probe.codec == codec && probe.frames == frames, "\(probe) against \(frames) frames listed")
        #expect(try await streamCodecs(file) == [codec, "aac"])

        // Serving on, the session untouched.
        #expect(try await fetch(port, "/healthz").status == 200)
        let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
        #expect(state["state"] as? String == "running" && (state["recording"] as? [String: Any])?["active"] as? Bool == false)
    }

    /// The codecs of a file's streams, in order (ffprobe).
    func streamCodecs(_ path: String) async throws -> [String] {
        try await offload {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
            p.arguments = ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }
}

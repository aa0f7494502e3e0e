import Foundation
import CameraCore
import Capture
import Movie
import Testing
@testable import ViewfinderApp

@Suite struct ConfigurationTests {
    @Test func theShippedConfigLoads() throws {
        let c = try Configuration.load(path: packageRoot + "/config.json", required: true)
        #expect(c.server.host == "127.0.0.1" && c.server.port == 8080)
        #expect(c.cameras == .auto)
        #expect(c.session.preset == "1280x720" && c.session.autostart)
    }

    /// A relative state.directory is the config file's: two servers with two files never
    /// share one saved state; an absolute one is as written.
    @Test func theSavedStateLivesBesideTheConfigFile() throws {
        let dir = NSTemporaryDirectory() + "vf-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: dir + "/config.json"))
        #expect(try ConfigurationOverrides().effectiveConfiguration(path: dir + "/config.json").state.file == dir + "/state/state.json")
        try Data(#"{"state": {"directory": "/var/lib/viewfinder/state"}}"#.utf8).write(to: URL(fileURLWithPath: dir + "/config.json"))
        #expect(try ConfigurationOverrides().effectiveConfiguration(path: dir + "/config.json").state.directory == "/var/lib/viewfinder/state")
    }

    @Test func emptyObjectMeansDefaults() throws {
        #expect(try Configuration.parse(Array("{}".utf8)) == Configuration())
    }

    @Test func cameraListDecodes() throws {
        let c = try Configuration.parse(Array("""
        {"cameras": [{"id": "rear", "source": "synthetic", "position": "rear"},
                     {"id": "desk", "source": "image", "path": "mock/desk.jpg", "position": "front"}],
         "session": {"camera": "desk"}}
        """.utf8))
        guard case .list(let entries) = c.cameras else { Issue.record("not a list"); return }
        #expect(entries.map(\.id) == ["rear", "desk"])
        #expect(entries[1].source == .image && entries[1].path == "mock/desk.jpg")
    }

    /// Each bad file names the key and the problem.
    static let bad: [(json: String, message: String)] = [
        (#"{"server": {"port": "8080"}}"#, "server.port: expected a number, found a string"),
        (#"{"server": {"port": 70000}}"#, "server.port: 70000 is outside 0…65535"),
        (#"{"server": {"prot": 1}}"#, "server.prot: unknown key"),
        (#"{"server": {"host": "localhost:80"}}"#, "server.host: 'localhost:80' is not an IPv4 address"),
        (#"{"sever": {}}"#, "sever: unknown key"),
        (#"{"stream": {"quality": 0}}"#, "stream.quality: 0 is outside 1…100"),
        (#"{"stream": {"workers": 0}}"#, "stream.workers: 0 is outside 1…32"),
        (#"{"session": {"preset": "huge"}}"#, "session.preset: unknown preset 'huge'"),
        (#"{"session": {"autostart": "yes"}}"#, "session.autostart: expected true or false, found a string"),
        (#"{"cameras": "all"}"#, #"cameras: expected "auto", "synthetic" or a list of cameras"#),
        (#"{"cameras": [{"id": "x", "source": "webcam"}]}"#, "cameras[0].source: 'webcam' is not one of v4l2, libcamera, synthetic, image"),
        (#"{"cameras": [{"id": "x", "source": "image"}]}"#, "cameras[0].path: required for an image camera"),
        (#"{"cameras": [{"id": "a", "source": "synthetic"}], "session": {"camera": "b"}}"#, "session.camera: no camera with id 'b'"),
        (#"[1, 2]"#, "expected an object, found an array"),
        (#"{"cameras": [{"id": "c", "source": "v4l2", "device": "/dev/video0", "codes": [{"type": "qr", "value": "x"}]}]}"#,
         "cameras[0].codes: only a synthetic camera's scene shows codes"),
        (#"{"cameras": [{"id": "c", "source": "v4l2", "device": "/dev/video0", "timecode": true}]}"#,
         "cameras[0].timecode: only a synthetic camera draws the timecode"),
        (#"{"cameras": [{"id": "s", "source": "synthetic", "codes": [{"type": "qrcode", "value": "x"}]}]}"#,
         "cameras[0].codes[0].type: unknown type 'qrcode'"),
        (#"{"metadata": {"rate": 0}}"#, "metadata.rate: scans a second within 0.1…60"),
        (#"{"live": {"keyframeInterval": 0.1}}"#, "live.keyframeInterval: seconds within 0.5…10"),
        (#"{"live": {"bitrate": 10}}"#, "live.bitrate: 10 is outside 100…100000"),
        (#"{"live": {"encoders": ["vaapi", "openh264"]}}"#, "live.encoders[1]: not an encoder: expected one of v4l2m2m, vaapi, nvenc, x264"),
        (#"{"live": {"encoders": ["x264", "x264"]}}"#, "live.encoders[1]: 'x264' is listed twice"),
        (#"{"live": {"encoders": []}}"#, "live.encoders: expected a list of encoders to try in order (v4l2m2m, vaapi, nvenc, x264)"),
        (#"{"stream": {"subsampling": "444"}}"#, "stream.subsampling: '444' is not one of 422, 420"),
        (#"{"recording": {"preset": "fastest"}}"#,
         "recording.preset: unknown libx264 preset 'fastest'; one of ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow"),
    ]

    @Test func aSyntheticCameraStartsWithTheCodesOfItsEntry() throws {
        let c = try Configuration.parse(Array(#"""
            {"cameras": [{"id": "s", "source": "synthetic", "codes": [{"type": "ean13", "value": "4006381333931", "x": 0.2, "y": 0.7, "size": 0.25}]}],
             "metadata": {"rate": 5}, "recording": {"directory": "/tmp/m", "preset": "ultrafast"}}
            """#.utf8))
        guard case .list(let entries) = c.cameras else { Issue.record("not a list"); return }
        #expect(entries.first?.codes == [SceneCode(type: .ean13, value: "4006381333931", x: 0.2, y: 0.7, size: 0.25)])
        #expect(c.metadata.rate == 5 && c.recording.directory == "/tmp/m" && c.recording.preset == "ultrafast")
        #expect(try Configuration.parse(Array(#"{"stream": {"subsampling": "420"}}"#.utf8)).stream.subsampling == .s420)
        #expect(try Configuration.parse(Array(#"{"stream": {"workers": 3}}"#.utf8)).stream.workers == 3)
        #expect(try Configuration.parse(Array(#"{"live": {"encoders": ["nvenc", "x264"]}}"#.utf8)).live.encoders == [.nvenc, .x264])
        #expect(try Configuration.parse(Array("{}".utf8)).live.encoders == [.v4l2m2m, .vaapi, .nvenc, .x264])
        #expect(try Configuration.parse(Array("{}".utf8)).stream.workers == min(ProcessInfo.processInfo.activeProcessorCount, 8))
    }

    @Test func badFilesNameTheKey() {
        for (json, message) in Self.bad {
            #expect(throws: Configuration.Error(description: message), "\(json)") {
                try Configuration.parse(Array(json.utf8))
            }
        }
    }

    @Test func malformedJSONIsReported() {
        #expect(throws: Configuration.Error.self) { try Configuration.parse(Array("{\"server\": ".utf8)) }
    }

    @Test func aMissingExplicitFileIsAnError() {
        #expect(throws: Configuration.Error(description: "/nonexistent.json: cannot read the file: open /nonexistent.json failed: No such file or directory (errno 2)")) {
            try Configuration.load(path: "/nonexistent.json", required: true)
        }
        #expect(throws: Never.self) { try Configuration.load(path: "/nonexistent.json", required: false) }
    }

    /// A config.json that is there but cannot be read is an error even when it was not named,
    /// saying why: running on the defaults would hide its settings. (A directory: EISDIR at
    /// the read; the tests run as root, for whom EACCES does not happen.)
    @Test func anUnreadableFileIsAnErrorNamedOrNot() throws {
        let dir = NSTemporaryDirectory() + "vf-config-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try #require(mkdir(dir, 0o700) == 0)
        defer { rmdir(dir) }
        for required in [true, false] {
            #expect(throws: Configuration.Error(description: "\(dir): cannot read the file: read \(dir) failed: Is a directory (errno 21)")) {
                try Configuration.load(path: dir, required: required)
            }
        }
    }
}

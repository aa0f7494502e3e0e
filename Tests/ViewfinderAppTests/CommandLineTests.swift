// The operators' subcommands of the built binary: --version, cameras, check-config; and the
// effective configuration they print.

import CaptureTestSupport
import Foundation
import HTTPServer
import Testing
@testable import ViewfinderApp
import JSON

@Suite(.serialized) struct CommandLineTests {
    /// Runs the binary to its exit; returns status, stdout and stderr.
    func run(_ args: [String], directory: String = NSTemporaryDirectory()) async throws -> (status: Int32, out: String, err: String) {
        try await offload {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: ProcessTests.binary)
            p.arguments = args
            p.currentDirectoryURL = URL(fileURLWithPath: directory)
            let out = Pipe(), err = Pipe()
            p.standardOutput = out
            p.standardError = err
            try p.run()
            // Drain both pipes before waiting, so a full pipe cannot stall the child.
            let errData = UncheckedBox(NSMutableData())
            let drained = DispatchSemaphore(value: 0)
            Thread { errData.value.append(err.fileHandleForReading.readDataToEndOfFile()); drained.signal() }.start()
            let outData = out.fileHandleForReading.readDataToEndOfFile()
            drained.wait()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: outData, as: UTF8.self),
                    String(decoding: errData.value as Data, as: UTF8.self))
        }
    }

    /// `state show` prints what is saved; `state reset CAMERA` forgets one camera's, `state
    /// reset` all of it (issue 57).
    @Test func stateShowAndReset() async throws {
        let dir = NSTemporaryDirectory() + "vf-cli-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: true)
        try StateFile(path: dir + "/state/state.json").save(.object(["main": .string("front"), "cameras": .object([
            "rear": .object(["zoom": .object(["factor": .number(2)])]), "front": .object(["zoom": .object(["factor": .number(3)])])])]))
        func shown() async throws -> JSONValue { try JSONValue.parse(Array(try await run(["state", "show"], directory: dir).out.utf8)) }
        #expect(try await shown()["cameras"]?["front"]?["zoom"]?["factor"] == .number(3))
        let one = try await run(["state", "reset", "front"], directory: dir)
        #expect(one.status == 0 && one.err.contains("camera 'front': saved settings removed"), "\(one.err)")
        let after = try await shown()
        #expect(after["cameras"]?["front"] == nil && after["main"] == nil && after["cameras"]?["rear"] != nil, "\(after)")
        #expect(try await run(["state", "reset"], directory: dir).status == 0)
        #expect(try await shown() == .object([:]), "nothing saved")
    }

    @Test func versionIsStamped() async throws {
        let r = try await run(["--version"])
        #expect(r.status == 0)
        let version = r.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+~]*/) != nil, "\(r.out)")
    }

    @Test func camerasListsTheSyntheticRearAndFront() async throws {
        let text = try await run(["cameras", "--cameras", "synthetic"])
        #expect(text.status == 0)
        #expect(text.out.contains("rear: Synthetic rear camera"), "\(text.out)")
        #expect(text.out.contains("front: Synthetic front camera"), "\(text.out)")
        #expect(text.out.contains("YUYV: ") && text.out.contains("1280x720@60/30/15/5"), "\(text.out)")
        #expect(text.out.contains("torch yes"))

        let json = try await run(["cameras", "--cameras", "synthetic", "--json"])
        #expect(json.status == 0)
        guard case .object(let root) = try JSONValue.parse(Array(json.out.utf8)),
              case .array(let cameras) = root["cameras"] else { Issue.record("not {\"cameras\": [...]}: \(json.out)"); return }
        let ids = cameras.compactMap { c -> String? in
            if case .object(let o) = c, case .string(let id) = o["id"] { return id }
            return nil
        }
        #expect(ids == ["rear", "front"])
    }

    @Test func checkConfigPrintsTheEffectiveConfiguration() async throws {
        let dir = NSTemporaryDirectory() + "vf-check-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/config.json"
        try Data(#"{"server": {"port": 9000, "publicDirectory": "/nonexistent"}, "cameras": "synthetic", "stream": {"quality": 70}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        let r = try await run(["check-config", "--config", path, "--fps", "15", "--workers", "3"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("valid"), "\(r.err)")
        #expect(r.err.contains("warning: server.publicDirectory"), "\(r.err)")
        // What it prints is a configuration file: the file's values with the flag over them.
        var expected = Configuration()
        expected.server.port = 9000
        expected.server.publicDirectory = "/nonexistent"
        expected.cameras = .synthetic
        expected.stream.quality = 70
        expected.session.fps = 15
        expected.stream.workers = 3
        expected.state.directory = dir + "/state"  // beside the file it was read from
        #expect(try Configuration.parse(Array(r.out.utf8)) == expected, "\(r.out)")

        // ./config.json is read when present, as serve does.
        let local = try await run(["check-config"], directory: dir)
        #expect(local.status == 0 && local.err.contains("config.json: valid"), "\(local.err)")
    }

    @Test func checkConfigRejectsABadFileOrFlagNamingTheKey() async throws {
        let path = NSTemporaryDirectory() + "vf-check-bad-\(UUID().uuidString).json"
        try Data(#"{"stream": {"quality": 101}}"#.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let bad = try await run(["check-config", "--config", path])
        #expect(bad.status == 2)
        #expect(bad.err.contains("stream.quality: 101 is outside 1…100"), "\(bad.err)")
        #expect(bad.out.isEmpty)

        let unknown = try await run(["check-config", "--config", path + ".missing"])
        #expect(unknown.status == 2 && unknown.err.contains("cannot read"), "\(unknown.err)")
        let flag = try await run(["check-config", "--preset", "enormous"])
        #expect(flag.status == 2 && flag.err.contains("session.preset: unknown preset 'enormous'"), "\(flag.err)")
    }
}

@Suite struct ConfigurationJSONTests {
    @Test func theEffectiveConfigurationParsesBackToItself() throws {
        #expect(try Configuration.parse(Array(Configuration().jsonText.utf8)) == Configuration())
        var c = Configuration()
        c.server.allowOrigins = ["https://example.org"]
        c.server.publicDirectory = "/usr/share/viewfinder/Public"
        c.session.camera = "desk"
        c.session.autostart = false
        c.capture.directory = "/var/lib/viewfinder/photos \"quoted\" \\ back"
        c.cameras = .list([
            .init(id: "desk", source: .image, path: "mock/desk.jpg", position: "front"),
            .init(id: "usb", source: .v4l2, device: "/dev/video0", position: nil, torchLED: "white:flash"),
        ])
        #expect(try Configuration.parse(Array(c.jsonText.utf8)) == c, "\(c.jsonText)")
    }

    /// Found by Fuzz/FuzzConfig: check-config dropped server.tls, maxConnectionsPerAddress,
    /// headerTimeout and a synthetic camera's codes, so its output served plain HTTP.
    @Test func everySectionReadsBack() throws {
        let text = """
        {"server": {"tls": {"certificate": "c.pem", "key": "k.pem"}, "maxConnectionsPerAddress": 4, "headerTimeout": 3},
         "cameras": [{"id": "bed", "source": "synthetic",
                      "codes": [{"type": "qr", "value": "hi \\"there\\"", "x": 0.1, "y": 0.25, "size": 0.3}]}]}
        """
        let c = try Configuration.parse(Array(text.utf8))
        #expect(c.server.tls == Configuration.TLS(certificate: "c.pem", key: "k.pem"))
        #expect(c.server.maxConnectionsPerAddress == 4 && c.server.headerTimeout == 3)
        guard case .list(let entries) = c.cameras else { Issue.record("cameras"); return }
        #expect(entries[0].codes.count == 1)
        #expect(try Configuration.parse(Array(c.jsonText.utf8)) == c, "\(c.jsonText)")
    }

    @Test func flagsOverTheFileAreCheckedLikeTheFile() throws {
        var o = ConfigurationOverrides()
        o.cameras = "synthetic"
        o.port = 0
        let c = try o.effectiveConfiguration(path: packageRoot + "/config.json")
        #expect(c.cameras == .synthetic && c.server.port == 0)
        o.port = 70000
        #expect(throws: Configuration.Error(description: "--port: 70000 is outside 0…65535")) {
            try o.effectiveConfiguration(path: packageRoot + "/config.json")
        }
        o.port = nil
        o.host = "localhost"
        #expect(throws: Configuration.Error(description: "server.host: 'localhost' is not an IPv4 address")) {
            try o.effectiveConfiguration(path: nil)
        }
    }

    /// A listed V4L2 camera that is not there at start is left out (the others serve), as a
    /// libcamera camera that is not there is; with none left the start is refused.
    @Test func aListedCameraThatIsNotThereIsLeftOut() throws {
        let missing = "/dev/video-not-there-\(UUID().uuidString.prefix(8))"
        let app = try Application(configuration: testConfiguration {
            $0.cameras = .list([Configuration.CameraEntry(id: "cam", source: .v4l2, device: missing),
                                Configuration.CameraEntry(id: "tc", source: .synthetic)])
        })
        #expect(app.cameras.ids == ["tc"])
        #expect(throws: Configuration.Error(description: "cameras: no usable camera")) {
            try Application(configuration: testConfiguration {
                $0.cameras = .list([Configuration.CameraEntry(id: "cam", source: .v4l2, device: missing)])
            })
        }
    }
}

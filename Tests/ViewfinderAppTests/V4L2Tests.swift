import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import HTTPServer
import Session
import JPEG
import Testing
@testable import ViewfinderApp

/// Real V4L2 ioctls against the kernel's vivid driver. They run inside the VM of
/// `make test-v4l2` (V4L2_VM=1, two vivid devices); on the host they are skipped. Under
/// software emulation CPU work is 15–40× slower, so only loose rate floors are asserted.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["V4L2_VM"] == "1"), .serialized)
struct V4L2Tests {
    static var devices: [String] {
        (ProcessInfo.processInfo.environment["V4L2_VM_DEVICES"] ?? "").split(separator: " ").map(String.init)
    }

    @Test func discoveryFindsVividWithItsFormats() throws {
        let nodes = V4L2Discovery.captureNodes()
        #expect(nodes.map(\.path) == Self.devices)
        let first = try #require(nodes.first)
        #expect(first.name.lowercased().contains("vivid"), "\(first.name)")
        #expect(!first.bus.isEmpty)
        #expect(first.formats.contains { $0.pixelFormat == .yuyv && $0.width == 640 && $0.height == 480 && !$0.fps.isEmpty })
        #expect(first.formats.contains { $0.pixelFormat == .grey })
        #expect(first.formats.contains { $0.pixelFormat == .nv12 } && first.formats.contains { $0.pixelFormat == .rgb24 })
        for pf in [PixelFormat.uyvy, .yvyu, .nv16, .yu12, .bgr24, .rgb565] {
            #expect(first.formats.contains { $0.pixelFormat == pf }, "vivid offers \(pf.rawValue)")
        }
    }

    /// An operator's first diagnostic, the built binary's `viewfinder cameras`, sees vivid
    /// with the ids and formats the server uses.
    @Test func theCamerasSubcommandListsVivid() async throws {
        let out = try await offload { () throws -> String in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: ProcessTests.binary)
            p.arguments = ["cameras", "--cameras", "auto", "--json"]
            p.currentDirectoryURL = URL(fileURLWithPath: NSTemporaryDirectory())
            let pipe = Pipe()
            p.standardOutput = pipe
            p.standardError = FileHandle.nullDevice
            try p.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return p.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : "exit \(p.terminationStatus)"
        }
        let cams = (try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])?["cameras"] as? [[String: Any]]
        #expect(cams?.map { $0["device"] as? String } == Self.devices, "\(out)")
        #expect(cams?.first?["id"] as? String == "platform-vivid-000", "\(out)")
        let formats = cams?.first?["formats"] as? [[String: Any]] ?? []
        #expect(formats.contains { $0["pixelFormat"] as? String == "YUYV" && $0["width"] as? Int == 640 }, "\(out)")
    }

    @Test(arguments: PixelFormat.allCases.filter { $0 != .mjpeg })
    func streamsFramesOfTheRequestedFormat(_ pf: PixelFormat) throws {
        let path = try #require(Self.devices.first)
        let camera = V4L2Camera(id: "v", path: path)
        let format = VideoFormat(pixelFormat: pf, width: 640, height: 480, fps: 30)
        let got = Collected()
        try camera.start(format: format, handler: got.handler)
        let frames = got.wait(for: 3, timeout: 30)
        camera.stop()
        try #require(frames.count >= 3, "\(frames.count) frames in 30 s")
        #expect(frames.allSatisfy { $0.count >= pf.frameBytes(width: 640, height: 480)! })
        #expect(frames.map(\.sequence) == frames.map(\.sequence).sorted())
    }

    /// Every format vivid offers that we support, through the server to a decodable JPEG.
    @Test(arguments: ["YUYV", "GREY", "NV12", "RGB3"])
    func eachFormatServesJPEGs(_ pf: String) async throws {
        try await withVivid { _, port in
            let r = try await fetch(port, "POST", "/api/session/prepare", body: #"{"pixelFormat": "\#(pf)", "preset": "640x480"}"#)
            #expect(r.status == 200, "\(r.text)")
            #expect(((r.json as? [String: Any])?["format"] as? [String: Any])?["pixelFormat"] as? String == pf)
            let photo = try await fetch(port, "POST", "/api/session/capture")
            #expect(photo.status == 200)
            let image = try JPEGDecoder.decodeRGB(photo.body)
            #expect(image.width == 640 && image.height == 480)
        }
    }

    @Test func theServerStreamsFromVivid() async throws {
        try await withVivid { app, port in
            let s = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect((s["camera"] as? [String: Any])?["kind"] as? String == "v4l2")
            #expect(s["state"] as? String == "running")
            let cams = (try await fetch(port, "/api/cameras").json as? [String: Any])?["cameras"] as? [[String: Any]]
            #expect(cams?.first?["device"] as? String == Self.devices.first)
            #expect(cams?.map { $0["id"] as? String } == ["platform-vivid-000", "platform-vivid-001"].prefix(Self.devices.count).map { $0 },
                    "ids from vivid's bus_info")

            let snap = try await fetch(port, "/snapshot")
            #expect(snap.status == 200 && snap.headers["x-viewfinder-online"] == "true")
            #expect(try JPEGDecoder.size(of: snap.body) == (640, 480) ? true : false)

            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= 3 }
            #expect(Multipart.parse(viewer.body).parts.count >= 3)
            // The encode read vivid's own mmap buffers: lent, never copied, and given back
            // (the stream goes on; a buffer never returned would starve the driver in 6 frames).
            let metrics = try await fetch(port, "/metrics").text
            let lent = Self.labelled(metrics, "viewfinder_preview_frames_lent_total").value
            #expect(lent >= 3 && Self.labelled(metrics, "viewfinder_preview_frames_copied_total").value == 0, "\(metrics)")
            let parts = Multipart.parse(viewer.body).parts.count
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= parts + 20 }
            #expect(Multipart.parse(viewer.body).parts.count >= parts + 20)

            let photo = try await fetch(port, "POST", "/api/session/capture")
            #expect(photo.status == 200 && photo.body.prefix(2) == [0xFF, 0xD8])

            // prepare at a second size while the viewer stays connected
            let p = try await fetch(port, "POST", "/api/session/prepare", body: #"{"preset": "1280x720"}"#)
            #expect(p.status == 200, "\(p.text)")
            try await viewer.read(timeout: 60) {
                guard let last = Multipart.parse($0).parts.last else { return false }
                return (try? JPEGDecoder.size(of: last.body).width) == 1280
            }
            let last = try #require(Multipart.parse(viewer.body).parts.last)
            #expect(try JPEGDecoder.size(of: last.body).width == 1280)
            _ = app
        }
    }

    /// The value of the main camera's series `name` in a /metrics text (its first camera's).
    static func labelled(_ metrics: String, _ name: String) -> (series: String, value: Int) {
        for line in metrics.split(separator: "\n") where line.hasPrefix(name + "{") {
            let parts = line.split(separator: " ")
            return (String(parts[0]), Int(parts.last ?? "") ?? -1)
        }
        return ("", -1)
    }

    @Test func switchBetweenTwoVividDevicesKeepsTheViewer() async throws {
        try #require(Self.devices.count >= 2, "needs --devices 2")
        try await withVivid { _, port in
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= 1 }
            let r = try await fetch(port, "POST", "/api/session/switch")
            #expect(r.status == 200, "\(r.text)")
            let cam = ((r.json as? [String: Any])?["camera"] as? [String: Any])?["id"] as? String
            #expect(cam == "platform-vivid-001", "ids come from bus_info, not the node number")
            let before = Multipart.parse(viewer.body).parts.count
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= before + 3 }
            #expect(Multipart.parse(viewer.body).parts.count >= before + 3, "the viewer keeps getting frames")
        }
    }

    /// Two vivid devices streaming at once, each in its own session at its own size; a
    /// control on one is not written to the other; stopping one leaves the other streaming.
    @Test func twoVividDevicesStreamAtOnce() async throws {
        try #require(Self.devices.count >= 2, "needs --devices 2")
        try await withVivid { _, port in
            let ids = ["platform-vivid-000", "platform-vivid-001"]
            #expect(try await fetch(port, "POST", "/api/cameras/\(ids[1])/session/prepare", body: #"{"width": 320, "height": 180}"#).status == 200)
            #expect(try await fetch(port, "POST", "/api/cameras/\(ids[1])/session/start").status == 200)
            let viewers = try ids.map { _ in try TestConnection(port: port) }
            for (v, id) in zip(viewers, ids) { try v.request("GET", "/cameras/\(id)/stream") }
            for v in viewers { try await v.read(timeout: 60) { Multipart.parse($0).parts.count >= 4 } }
            let sizes = try viewers.map { try JPEGDecoder.size(of: Multipart.parse($0.body).parts.last!.body) }
            #expect(sizes[0] == (640, 480) ? true : false, "\(sizes[0])")
            #expect(sizes[1] == (320, 180) ? true : false, "\(sizes[1])")
            let brightness = { (d: String) -> String in
                let p = Process(), out = Pipe()
                p.executableURL = URL(fileURLWithPath: "/usr/bin/v4l2-ctl")
                p.arguments = ["-d", d, "-C", "brightness"]
                p.standardOutput = out
                try? p.run(); p.waitUntilExit()
                return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            }
            let otherBefore = brightness(Self.devices[0])
            #expect(try await fetch(port, "POST", "/api/cameras/\(ids[1])/session/controls", body: #"{"brightness": 200}"#).status == 200)
            #expect(brightness(Self.devices[1]).contains("200"))
            #expect(brightness(Self.devices[0]) == otherBefore, "the other device untouched")
            #expect(try await fetch(port, "POST", "/api/cameras/\(ids[1])/session/stop").status == 200)
            let before = Multipart.parse(viewers[0].body).parts.count
            try await viewers[0].read(timeout: 60) { Multipart.parse($0).parts.count >= before + 3 }
            #expect(Multipart.parse(viewers[0].body).parts.count >= before + 3, "the first keeps streaming")
            let s0 = try await fetch(port, "/api/cameras/\(ids[0])/session").json as? [String: Any]
            #expect(s0?["state"] as? String == "running" && s0?["main"] as? Bool == true)
        }
    }
}

/// Device loss on a real driver: vivid's `disconnect` control behaves like a USB unplug
/// (the node fails until every handle is closed, then comes back), and
/// `inject_fatal_streaming_error` breaks the stream. An extension of V4L2Tests so that it
/// is serialized with them: two servers must never hold the same node.
extension V4L2Tests {
    func control(_ device: String, _ setting: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/v4l2-ctl")
        p.arguments = ["-d", device, "-c", setting]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "v4l2-ctl -c \(setting)")
    }

    func state(_ port: Int) async throws -> [String: Any] {
        try #require(try await fetch(port, "/api/session").json as? [String: Any])
    }

    /// Open handles and mappings of video nodes in this process.
    func videoHandles() -> (fds: Int, maps: Int) {
        let fds = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).filter {
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) ?? "").hasPrefix("/dev/video")
        }.count
        // Read to the end: /proc files have no size, and with GStreamer's libraries loaded the
        // map is long (String(contentsOfFile:) stopped short of the video buffers).
        let maps = String(decoding: FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
            .split(separator: "\n").filter { $0.contains("/dev/video") }.count
        return (fds, maps)
    }

    @Test(arguments: ["disconnect=1", "inject_fatal_streaming_error=1"])
    func lossGivesThePlaceholderThenRecoversWithTheSameSettings(_ fault: String) async throws {
        let device = try #require(Self.devices.first)
        try await withVivid { _, port in
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= 2 }
            _ = try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": 180}"#)
            let running = videoUse()  // mapped bytes: the kernel may merge adjacent buffers' lines in maps
            #expect(running.fds == 2 && running.mapped > 0, "the streaming and the control handle, and the buffers: \(running)")

            try control(device, fault)
            let lost = try await eventually(timeout: 30) { (try await state(port))["state"] as? String == "interrupted" }
            #expect(lost, "the session says interrupted")
            let s = try await state(port)
            #expect(s["online"] as? Bool == false && (s["error"] as? String)?.isEmpty == false)
            let snap = try await fetch(port, "/snapshot")
            #expect(snap.status == 200 && snap.headers["x-viewfinder-online"] == "false", "a placeholder while offline")

            let back = try await eventually(timeout: 60) { (try await state(port))["state"] as? String == "running" }
            #expect(back, "reopened when the device returned")
            let after = try await state(port)
            #expect((after["format"] as? [String: Any])?["width"] as? Int == 640)
            #expect((after["orientation"] as? [String: Any])?["rotation"] as? Int == 180, "same settings")
            let before = Multipart.parse(viewer.body).parts.count
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= before + 3 }
            #expect(Multipart.parse(viewer.body).parts.count >= before + 3, "the same viewer gets live frames again")
            let online = try await fetch(port, "/snapshot")
            #expect(online.headers["x-viewfinder-online"] == "true")
            #expect(videoUse() == running, "no leaked fd or mapping")
        }
    }
}

extension V4L2Tests {
    func ctl(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/v4l2-ctl")
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    @Test func rawControlsRoundTripAndCapabilitiesAreWhatVividHas() async throws {
        let device = try #require(Self.devices.first)
        try await withVivid { _, port in
            let list = try #require((try await fetch(port, "/api/session/controls").json as? [String: Any])?["controls"] as? [[String: Any]])
            let brightness = try #require(list.first { $0["name"] as? String == "Brightness" })
            #expect(brightness["minimum"] as? Int == 0 && brightness["maximum"] as? Int == 255)
            #expect(brightness["key"] as? String == "brightness")
            #expect(list.contains { $0["name"] as? String == "Gain" })

            let set = try await fetch(port, "POST", "/api/session/controls", body: #"{"brightness": 300, "horizontal_flip": true}"#)
            #expect(set.status == 200, "\(set.text)")
            let after = (set.json as? [String: Any])?["controls"] as? [[String: Any]]
            #expect(after?.first { $0["name"] as? String == "Brightness" }?["value"] as? Int == 255, "clamped")
            #expect(try ctl(["-d", device, "--get-ctrl=brightness"]).contains("255"), "the driver has it")
            #expect(try ctl(["-d", device, "--get-ctrl=horizontal_flip"]).contains("1"))

            let unknown = try await fetch(port, "POST", "/api/session/controls", body: #"{"warp_drive": 1}"#)
            #expect(unknown.status == 422)
            #expect(((unknown.json as? [String: [String: Any]])?["error"]?["supported"] as? [String])?.contains("brightness") == true)
            let wrongType = try await fetch(port, "POST", "/api/session/controls", body: #"{"brightness": "max"}"#)
            #expect(wrongType.status == 400)

            // vivid has no camera-class controls: capabilities say so, and the calls answer accordingly.
            let cams = (try await fetch(port, "/api/cameras").json as? [String: Any])?["cameras"] as? [[String: Any]]
            let caps = try #require(cams?.first?["capabilities"] as? [String: Any])
            #expect(caps["torch"] as? Bool == false && (caps["zoom"] as? [String: Any])?["optical"] as? Bool == false)
            #expect(try await fetch(port, "POST", "/api/session/torch", body: #"{"mode": "on"}"#).status == 409)
            #expect(try await fetch(port, "POST", "/api/session/zoom", body: #"{"factor": 2}"#).status == 200, "digital zoom")
        }
    }
}

extension V4L2Tests {
    /// MJPEG from the camera reaches viewers byte for byte: no decode, no re-encode.
    @Test func mjpegFromALoopbackWriterPassesThroughUntouched() async throws {
        let loopbacks: String? = ProcessInfo.processInfo.environment["V4L2_VM_LOOPBACK"]
        let first: String? = loopbacks?.split(separator: " ").first.map { String($0) }
        let node = try #require(first, "needs --loopback 1")
        let raw = Capture.PlaceholderFrame.render(width: 640, height: 480, message: "LOOPBACK")
        let jpeg = try raw.withUnsafeBytes { try JPEGEncoder().encodeYUYV($0, width: 640, height: 480, stride: 1280, quality: 85) }
        let writer = try LoopbackWriter(path: node, width: 640, height: 480, jpeg: jpeg)
        defer { writer.stop() }
        let listed = await eventually(timeout: 20) {
            (try? V4L2Discovery.describe(node))??.formats.contains { $0.pixelFormat == .mjpeg && $0.width == 640 } ?? false
        }
        #expect(listed, "the loopback node offers MJPEG 640x480 once fed")
        try await withServer({ c in
            c.cameras = .list([.init(id: "loop", source: .v4l2, device: node, position: "external")])
            c.session.preset = "640x480"
        }) { _, port in
            let s = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect((s["format"] as? [String: Any])?["pixelFormat"] as? String == "MJPG", "\(s)")
            let snap = try await fetch(port, "/snapshot")
            #expect(snap.status == 200 && snap.body == jpeg, "bytes out = bytes in (\(snap.body.count) vs \(jpeg.count))")
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read(timeout: 30) { Multipart.parse($0).parts.count >= 2 }
            #expect(Multipart.parse(viewer.body).parts.allSatisfy { $0.body == jpeg })

            // A rotation goes through tjTransform: no decode, the size turns.
            #expect(try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": 90}"#).status == 200)
            let turned = try await fetch(port, "POST", "/api/session/capture")
            #expect(turned.status == 200)
            #expect(try JPEGDecoder.size(of: turned.body) == (480, 640) ? true : false)
        }
    }
}

/// The server on the VM's vivid devices (discovered), 640x480 at 15 fps.
func withVivid(_ body: (Application, Int) async throws -> Void) async throws {
    try await withServer({ c in
        c.cameras = .auto
        c.session.preset = "640x480"
        c.session.fps = 15
    }, body)
}

/// Frames copied out of the capture thread.
final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var frames: [(sequence: UInt64, count: Int)] = []
    private let arrived = DispatchSemaphore(value: 0)

    var handler: FrameHandler {
        { [self] frame in
            lock.withLock { frames.append((frame.sequence, frame.bytes.count)) }
            arrived.signal()
        }
    }

    func wait(for n: Int, timeout: Double) -> [(sequence: UInt64, count: Int)] {
        let deadline = DispatchTime.now() + timeout * TestTime.scale
        for _ in 0..<n where arrived.wait(timeout: deadline) == .timedOut { break }
        return lock.withLock { frames }
    }
}

/// Zoom, rotation and mirroring on vivid's raw formats, read back from what the server
/// sends: vivid's default picture is 75% colour bars, eight vertical bars of equal width.
extension V4L2Tests {
    static let vividBars = ["white", "yellow", "cyan", "green", "magenta", "red", "blue", "black"]

    /// Each channel of a bar is either off or at 75%; limited-range YUV keeps off near 16.
    static func barName(_ c: (r: Double, g: Double, b: Double)) -> String {
        switch (c.r > 100, c.g > 100, c.b > 100) {
        case (true, true, true): "white"
        case (true, true, false): "yellow"
        case (false, true, true): "cyan"
        case (false, true, false): "green"
        case (true, false, true): "magenta"
        case (true, false, false): "red"
        case (false, false, true): "blue"
        case (false, false, false): "black"
        }
    }

    /// Runs of bar colours along a row (at `row`) or down a column (at `column`), each pixel
    /// averaged over 8 across the line; runs under 6 pixels (JPEG ringing at an edge) dropped.
    static func bars(_ image: RGBImage, row: Int? = nil, column: Int? = nil) -> [(name: String, length: Int)] {
        let n = row != nil ? image.width : image.height
        var runs: [(name: String, length: Int)] = []
        for i in 0..<n {
            let c = row.map { image.mean(x: i, y: $0 - 4, width: 1, height: 8) } ?? image.mean(x: column! - 4, y: i, width: 8, height: 1)
            let name = barName(c)
            if runs.last?.name == name { runs[runs.count - 1].length += 1 } else { runs.append((name, 1)) }
        }
        var merged: [(name: String, length: Int)] = []
        for r in runs where r.length >= 6 {
            if merged.last?.name == r.name { merged[merged.count - 1].length += r.length } else { merged.append(r) }
        }
        return merged
    }

    /// vivid keeps control values across opens: put back what other tests changed.
    func resetVividPicture() throws {
        let device = try #require(Self.devices.first)
        try control(device, "brightness=128,contrast=128,saturation=128,hue=0,horizontal_flip=0,vertical_flip=0")
    }

    func capture(_ port: Int) async throws -> RGBImage {
        let photo = try await fetch(port, "POST", "/api/session/capture")
        try #require(photo.status == 200, "\(photo.text)")
        return try JPEGDecoder.decodeRGB(photo.body)
    }

    func prepare(_ port: Int, _ pf: String) async throws {
        let r = try await fetch(port, "POST", "/api/session/prepare", body: #"{"pixelFormat": "\#(pf)", "preset": "640x480"}"#)
        try #require(r.status == 200, "\(r.text)")
        #expect(((r.json as? [String: Any])?["format"] as? [String: Any])?["pixelFormat"] as? String == pf)
    }

    /// Formats that used to ignore the transform: a quarter turn puts vivid's left edge
    /// (white) at the top; zoom 2 shows the middle four bars, each twice as wide.
    @Test(arguments: ["NV12", "RGB3"])
    func rotationAndZoomApplyToRawVividFrames(_ pf: String) async throws {
        try resetVividPicture()
        try await withVivid { _, port in
            try await prepare(port, pf)
            #expect(try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": 90}"#).status == 200)
            let turned = try await capture(port)
            #expect(turned.width == 480 && turned.height == 640, "height x width")
            // Column 120 is source row 359, clear of vivid's text at the top left.
            let down = Self.bars(turned, column: 120)
            #expect(down.map(\.name) == Self.vividBars, "top to bottom: \(down)")
            #expect(down.allSatisfy { abs($0.length - 80) <= 6 }, "\(down)")

            #expect(try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": 0}"#).status == 200)
            #expect(try await fetch(port, "POST", "/api/session/zoom", body: #"{"factor": 2}"#).status == 200)
            let zoomed = try await capture(port)
            #expect(zoomed.width == 640 && zoomed.height == 480)
            let across = Self.bars(zoomed, row: 360)
            #expect(across.map(\.name) == ["cyan", "green", "magenta", "red"], "\(across)")
            #expect(across.allSatisfy { abs($0.length - 160) <= 8 }, "twice as wide: \(across)")
        }
    }

    /// Every raw format vivid offers streams, decodes with the bars in order, and turns:
    /// at 270° clockwise the bars run bottom (white) to top (black).
    @Test(arguments: ["YUYV", "UYVY", "YVYU", "NV12", "NV16", "YU12", "RGB3", "BGR3", "RGBP", "GREY"])
    func everyRawFormatShowsVividsBarsAndTurns(_ pf: String) async throws {
        try resetVividPicture()
        try await withVivid { _, port in
            try await prepare(port, pf)
            let image = try await capture(port)
            #expect(image.width == 640 && image.height == 480)
            let turnedBody = try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": 270}"#)
            #expect(turnedBody.status == 200)
            let turned = try await capture(port)
            #expect(turned.width == 480 && turned.height == 640)
            if pf == "GREY" {
                // No colour: the bars' luma falls from white to black.
                let lumas = (0..<8).map { image.mean(x: 80 * $0 + 30, y: 340, width: 20, height: 40).r }
                #expect(zip(lumas, lumas.dropFirst()).allSatisfy { $0 > $1 + 8 }, "\(lumas)")
                let up = (0..<8).map { turned.mean(x: 340, y: 640 - 80 * $0 - 50, width: 40, height: 20).r }
                #expect(zip(up, up.dropFirst()).allSatisfy { $0 > $1 + 8 }, "bottom to top: \(up)")
                return
            }
            let across = Self.bars(image, row: 360)
            #expect(across.map(\.name) == Self.vividBars, "\(pf): \(across)")
            #expect(across.allSatisfy { abs($0.length - 80) <= 6 }, "\(across)")
            // Source row 360 is output column 360 at 270°.
            let down = Self.bars(turned, column: 360)
            #expect(down.map(\.name) == Self.vividBars.reversed(), "\(pf) top to bottom: \(down)")
        }
    }
}

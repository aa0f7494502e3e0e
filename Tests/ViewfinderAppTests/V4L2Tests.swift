import CameraCore
import Capture
import Foundation
import HTTPServer
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
    }

    @Test(arguments: [PixelFormat.yuyv, .grey])
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

    @Test func theServerStreamsFromVivid() async throws {
        try await withServer({ c in
            c.cameras = .auto
            c.session.preset = "640x480"
            c.session.fps = 15
        }) { app, port in
            let s = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect((s["camera"] as? [String: Any])?["kind"] as? String == "v4l2")
            #expect(s["state"] as? String == "running")
            let cams = (try await fetch(port, "/api/cameras").json as? [String: Any])?["cameras"] as? [[String: Any]]
            #expect(cams?.first?["device"] as? String == Self.devices.first)

            let snap = try await fetch(port, "/snapshot")
            #expect(snap.status == 200 && snap.headers["x-viewfinder-online"] == "true")
            #expect(try JPEGDecoder.size(of: snap.body) == (640, 480) ? true : false)

            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= 3 }
            #expect(Multipart.parse(viewer.body).parts.count >= 3)

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

    @Test func switchBetweenTwoVividDevicesKeepsTheViewer() async throws {
        try #require(Self.devices.count >= 2, "needs --devices 2")
        try await withServer({ c in
            c.cameras = .auto
            c.session.preset = "640x480"
            c.session.fps = 15
        }) { _, port in
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= 1 }
            let r = try await fetch(port, "POST", "/api/session/switch")
            #expect(r.status == 200, "\(r.text)")
            let cam = ((r.json as? [String: Any])?["camera"] as? [String: Any])?["id"] as? String
            #expect(cam == "video1")
            let before = Multipart.parse(viewer.body).parts.count
            try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= before + 3 }
            #expect(Multipart.parse(viewer.body).parts.count >= before + 3, "the viewer keeps getting frames")
        }
    }
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
        let deadline = DispatchTime.now() + timeout
        for _ in 0..<n where arrived.wait(timeout: deadline) == .timedOut { break }
        return lock.withLock { frames }
    }
}

// The metadata output on a session: zbar reads what the camera shows, on its own worker,
// and the codes come out in the picture's coordinates. An MJPEG camera is scanned from its
// luma alone (libjpeg-turbo decodes greyscale).

import Barcodes
import CameraCore
import CaptureTestSupport
import Foundation
import JPEG
import Testing
@testable import Session

@Suite struct MetadataOutputTests {
    /// A 640x480 JPEG showing a QR code of `value` centred at (cx, cy) pixels, 6 px a module.
    static func qrJPEG(_ value: String, cx: Int = 320, cy: Int = 240) throws -> [UInt8] {
        let grid = try Symbol.grid(.qr, value)
        var yuyv = [UInt8](repeating: 128, count: 640 * 480 * 2)
        for i in stride(from: 0, to: yuyv.count, by: 2) { yuyv[i] = 200 }
        let side = grid.width * 6, x0 = cx - side / 2, y0 = cy - side / 2
        for y in 0..<side { for x in 0..<side { yuyv[((y0 + y) * 640 + x0 + x) * 2] = grid[x / 6, y / 6] ? 16 : 235 } }
        return try yuyv.withUnsafeBytes { try JPEGEncoder().encodeYUYV($0, width: 640, height: 480, stride: 1280, quality: 90) }
    }

    /// Subscribed from its creation, so no event published after it is missed.
    final class Watcher: Sendable {
        let events: EventSubscription
        init(_ hub: EventHub) { events = hub.subscription(initial: []); events.attach {} }
        deinit { events.cancel() }

        /// The next `metadata` event, within `timeout` seconds (polled every 10 ms).
        func next(timeout: Double = TestTime.patience) async -> MetadataEvent? {
            let deadline = TestTime.deadline(timeout)
            while Date() < deadline {
                while case .item(let e) = events.next() {
                    if case .metadata(let m) = e { return m }
                }
                try? await Task.sleep(nanoseconds: 10_000_000)
            }
            return nil
        }
    }

    @Test func anMJPEGCamerasCodeIsReadFromItsLumaAndPlacedInThePicture() async throws {
        let camera = MJPEGTestCamera(jpeg: try Self.qrJPEG("mjpeg-qr", cx: 200, cy: 240))
        let events = EventHub()
        let s = try CaptureSession(camera: camera, configuration: SessionConfiguration(preset: "640x480"), events: events)
        try await s.start()
        let watcher = Watcher(events)
        let state = try await s.setMetadata(types: ["qr"], rectOfInterest: nil)
        #expect(state.metadata.types == [.qr])
        let event = try #require(await watcher.next())
        let object = try #require(event.objects.first)
        #expect(event.camera == "mjpeg" && object.type == .qr && object.value == "mjpeg-qr" && object.encoding == nil)
        let centre = (object.bounds.x + object.bounds.width / 2, object.bounds.y + object.bounds.height / 2)
        #expect(abs(centre.0 - 200.0 / 640) < 0.02 && abs(centre.1 - 0.5) < 0.02, "\(object.bounds)")
        #expect(object.corners.count == 4)

        // Turned a quarter clockwise: the code on the left of the frame is at the top of the picture.
        _ = try await s.orientation(OrientationRequest(rotation: 90))
        _ = try await s.setMetadata(types: ["qr"], rectOfInterest: nil)  // forget what was in view: announce afresh
        let t = try #require(await watcher.next()?.objects.first)
        let tc = (t.bounds.x + t.bounds.width / 2, t.bounds.y + t.bounds.height / 2)
        #expect(abs(tc.0 - 0.5) < 0.02 && abs(tc.1 - 200.0 / 640) < 0.02, "\(t.bounds)")

        // Off: no more scans.
        _ = try await s.setMetadata(types: [], rectOfInterest: nil)
        #expect(await s.state().metadata == MetadataState(types: [], rectOfInterest: nil, objects: []))
        await s.stop()
    }

    @Test func unknownTypesAndBadRectanglesChangeNothing() async throws {
        let s = try CaptureSession(camera: MJPEGTestCamera(), configuration: SessionConfiguration(preset: "640x480"))
        await #expect(throws: SessionError.unsupported("metadata type 'vp9'", supported: MetadataObjectType.allCases.map(\.rawValue))) {
            try await s.setMetadata(types: ["qr", "vp9"], rectOfInterest: nil)
        }
        for rect in [NormalizedRect(x: 1, y: 0.5, width: 0.6, height: 0.1), NormalizedRect(x: 0, y: 0, width: 0, height: 1),
                     NormalizedRect(x: -0.1, y: 0, width: 0.5, height: 0.5), NormalizedRect(x: .nan, y: 0, width: 1, height: 1),
                     NormalizedRect(x: 0, y: 0, width: 1.5, height: 1)] {
            await #expect(throws: SessionError.self) { try await s.setMetadata(types: ["qr"], rectOfInterest: rect) }
        }
        #expect(await s.state().metadata.types.isEmpty)
        // Reaching past the edge is cut at it.
        let cut = try await s.setMetadata(types: ["qr"], rectOfInterest: NormalizedRect(x: 0.5, y: 0.5, width: 0.6, height: 0.1))
        #expect(cut.metadata.rectOfInterest == NormalizedRect(x: 0.5, y: 0.5, width: 0.5, height: 0.1))
    }
}

@Suite struct MetadataObjectTests {
    @Test func textIsTextAndOtherBytesAreBase64() {
        let corners = [NormalizedPoint(x: 0.1, y: 0.2), NormalizedPoint(x: 0.3, y: 0.2), NormalizedPoint(x: 0.3, y: 0.5)]
        let text = MetadataObject(type: .qr, bytes: Array("grüß".utf8), corners: corners)
        #expect(text.value == "grüß" && text.encoding == nil)
        let binary = MetadataObject(type: .qr, bytes: [0xFF, 0x00, 0xFE], corners: corners)
        #expect(binary.value == "/wD+" && binary.encoding == "base64")
        #expect(binary.bounds == NormalizedRect(x: 0.1, y: 0.2, width: 0.2, height: 0.3))
    }

    @Test func viewPointsFollowZoomRotationAndMirror() {
        let p = (x: 0.25, y: 0.4)
        func at(_ t: FrameTransform) -> (Double, Double) { let v = t.viewPoint(x: p.x, y: p.y); return ((v.x * 1e6).rounded() / 1e6, (v.y * 1e6).rounded() / 1e6) }
        #expect(at(.identity) == (0.25, 0.4))
        #expect(at(FrameTransform(rotation: 90)) == (0.6, 0.25))
        #expect(at(FrameTransform(rotation: 180)) == (0.75, 0.6))
        #expect(at(FrameTransform(rotation: 270)) == (0.4, 0.75))
        #expect(at(FrameTransform(rotation: 90, mirrored: true)) == (0.4, 0.25))
        #expect(at(FrameTransform(zoom: 2)) == (0, 0.3))
        // An off-centre zoom: the crop [0.1, 0.6] × [0.3, 0.8] about (0.35, 0.55).
        #expect(at(FrameTransform(zoom: 2, center: Point(x: 0.35, y: 0.55))) == (0.3, 0.2))
        // A centre past the edge: the crop stops there ([0.5, 1] × [0, 0.5]); the point is left of it.
        #expect(at(FrameTransform(zoom: 2, center: Point(x: 0.9, y: 0.1))) == (-0.5, 0.8))
        #expect(at(FrameTransform(zoom: 2, rotation: 90, center: Point(x: 0.35, y: 0.55))) == (0.8, 0.3))
    }
}

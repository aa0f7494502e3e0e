// MJPEG cameras: the preview gets the camera's own bytes; rotation stays lossless; digital
// zoom keeps the frame's size (decoded, cropped, encoded only then); photos work.

import CameraCore
import CaptureTestSupport
import Foundation
import JPEG
import Testing
@testable import Session

@Suite(.serialized) struct MJPEGOutputTests {
    func photo(_ s: CaptureSession) async throws -> EncodedFrame {
        try #require(await s.capture(quality: 90).frame(timeout: TestTime.patience * TestTime.scale))
    }

    @Test func theCamerasBytesPassThroughAndTransformsStillWork() async throws {
        let camera = MJPEGTestCamera()
        let s = try CaptureSession(camera: camera, configuration: SessionConfiguration(preset: "640x480"))
        try await s.start()
        #expect(try await photo(s).jpeg == camera.jpeg, "no transform: the camera's own JPEG")

        _ = try await s.orientation(OrientationRequest(rotation: 90))
        let turned = try await photo(s)
        #expect(turned.width == 480 && turned.height == 640)

        _ = try await s.orientation(OrientationRequest(rotation: 0))
        _ = try await s.zoom(ZoomRequest(factor: 2))
        let zoomed = try await photo(s)
        let image = try JPEGDecoder.decodeRGB(zoomed.jpeg)
        #expect(image.width == 640 && image.height == 480, "digital zoom keeps the size")
        var transitions = 0
        for x in 1..<640 where (image.pixel(x: x, y: 240).g > 128) != (image.pixel(x: x - 1, y: 240).g > 128) { transitions += 1 }
        #expect((45...60).contains(transitions), "bars twice as wide: about 53 edges, not 106 (\(transitions))")
        await s.stop()
    }
}

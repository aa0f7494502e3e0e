import CameraCore
import CaptureTestSupport
import Foundation
import JPEG
import Testing
@testable import Capture

/// Collects frames delivered on a camera's thread and lets the test await a count.
final class FrameCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var frames: [(sequence: UInt64, bytes: [UInt8], format: VideoFormat)] = []
    private let arrived = DispatchSemaphore(value: 0)

    var handler: FrameHandler {
        { [self] frame in
            lock.withLock { frames.append((frame.sequence, Array(frame.bytes), frame.format)) }
            arrived.signal()
        }
    }

    /// Waits for `n` frames, up to `timeout` seconds in total.
    func wait(for n: Int, timeout: Double = TestTime.patience) -> [(sequence: UInt64, bytes: [UInt8], format: VideoFormat)] {
        let deadline = DispatchTime.now() + timeout * TestTime.scale
        for _ in 0..<n where arrived.wait(timeout: deadline) == .timedOut { break }
        return lock.withLock { frames }
    }
}

func decode(_ yuyv: [UInt8], _ f: VideoFormat) throws -> RGBImage {
    let encoder = try JPEGEncoder()
    let jpeg = try yuyv.withUnsafeBytes { try encoder.encodeYUYV($0, width: f.width, height: f.height, stride: f.width * 2, quality: 95) }
    return try JPEGDecoder.decodeRGB(jpeg)
}

@Suite struct SyntheticCameraTests {
    let format = VideoFormat(pixelFormat: .yuyv, width: 320, height: 240, fps: 30)

    @Test func deliversFramesOfTheConfiguredSizeInOrder() throws {
        let camera = SyntheticCamera(id: "rear", position: .rear)
        let collector = FrameCollector()
        try camera.start(format: format, handler: collector.handler)
        let frames = collector.wait(for: 3)
        camera.stop()
        try #require(frames.count >= 3)
        #expect(frames.allSatisfy { $0.bytes.count == 320 * 240 * 2 && $0.format == format })
        #expect(frames.map(\.sequence) == Array(frames.map(\.sequence)).sorted())
        #expect(frames[0].bytes != frames[2].bytes, "the scene moves and the counter advances")
    }

    @Test func stopMeansNoMoreFrames() throws {
        let camera = SyntheticCamera(id: "rear", position: .rear)
        let collector = FrameCollector()
        try camera.start(format: format, handler: collector.handler)
        _ = collector.wait(for: 2)
        camera.stop()
        let after = collector.wait(for: 0).count
        // Give a running thread every chance to misbehave: three frame intervals.
        Thread.sleep(forTimeInterval: 0.1)
        #expect(collector.wait(for: 0).count == after)
    }

    @Test func rearAndFrontAreDifferentScenes() throws {
        var images: [RGBImage] = []
        for position in [CameraDescriptor.Position.rear, .front] {
            let camera = SyntheticCamera(id: position.rawValue, position: position)
            let collector = FrameCollector()
            try camera.start(format: format, handler: collector.handler)
            let frames = collector.wait(for: 1)
            camera.stop()
            images.append(try decode(try #require(frames.first).bytes, format))
        }
        let (rear, front) = (images[0], images[1])
        // Rear: white bar at the left, blue bar near the right (bars scene).
        let rearLeft = rear.mean(x: 8, y: 40, width: 16, height: 40)
        let rearBlue = rear.mean(x: 320 * 6 / 8 + 8, y: 40, width: 16, height: 40)
        #expect(rearLeft.r > 200 && rearLeft.g > 200 && rearLeft.b > 200)
        #expect(rearBlue.b > 200 && rearBlue.r < 60)
        // Front: a skin-toned face in the middle, a blue-grey wall at the top-left.
        let face = front.mean(x: 150, y: 110, width: 20, height: 10)
        let wall = front.mean(x: 8, y: 20, width: 16, height: 16)
        #expect(face.r > 190 && face.r > face.b + 50, "face \(face)")
        #expect(wall.b > wall.r + 40, "wall \(wall)")
    }

    @Test func unsupportedFormatIsRefused() {
        let camera = SyntheticCamera(id: "rear", position: .rear)
        #expect(throws: CameraError.self) {
            try camera.start(format: VideoFormat(pixelFormat: .yuyv, width: 333, height: 200, fps: 30)) { _ in }
        }
        #expect(throws: CameraError.self) {
            try camera.start(format: VideoFormat(pixelFormat: .mjpeg, width: 320, height: 240, fps: 30)) { _ in }
        }
    }

    @Test func placeholderSaysNoSignal() throws {
        let raw = PlaceholderFrame.render(width: 320, height: 240)
        let image = try decode(raw, format)
        // Dark everywhere except the white text in the middle band.
        #expect(image.mean(x: 0, y: 0, width: 320, height: 40).r < 40)
        let band = image.mean(x: 60, y: 110, width: 200, height: 20)
        #expect(band.r > 40, "text present: \(band)")
    }
}

@Suite struct ImageCameraTests {
    @Test func servesAStillImageAtTheRequestedSize() throws {
        // Make a JPEG: left red, right blue.
        let w = 64, h = 48
        var yuyv = [UInt8](repeating: 0, count: w * h * 2)
        for y in 0..<h { for x in stride(from: 0, to: w, by: 2) {
            let c = x < w / 2 ? YUV(r: 255, g: 0, b: 0) : YUV(r: 0, g: 0, b: 255)
            let i = (y * w + x) * 2
            yuyv[i] = c.y; yuyv[i + 1] = c.u; yuyv[i + 2] = c.y; yuyv[i + 3] = c.v
        } }
        let jpeg = try yuyv.withUnsafeBytes { try JPEGEncoder().encodeYUYV($0, width: w, height: h, stride: w * 2, quality: 95) }
        let path = NSTemporaryDirectory() + "vf-image-\(UUID().uuidString).jpg"
        _ = FileManager.default.createFile(atPath: path, contents: Data(jpeg))
        defer { try? FileManager.default.removeItem(atPath: path) }

        let camera = ImageCamera(id: "desk", path: path, position: .front)
        #expect(camera.formats.contains { $0.width == 64 && $0.height == 48 })
        #expect(camera.capabilities.torch == false)
        let format = VideoFormat(pixelFormat: .yuyv, width: 128, height: 96, fps: 30)
        let collector = FrameCollector()
        try camera.start(format: format, handler: collector.handler)
        let frames = collector.wait(for: 1)
        camera.stop()
        let image = try decode(try #require(frames.first).bytes, format)
        #expect(image.width == 128)
        #expect(image.mean(x: 8, y: 8, width: 32, height: 32).r > 200)
        #expect(image.mean(x: 88, y: 8, width: 32, height: 32).b > 200)
    }

    @Test func missingFileFailsToStart() {
        let camera = ImageCamera(id: "x", path: "/nonexistent/x.jpg", position: .front)
        #expect(throws: CameraError.self) {
            try camera.start(format: VideoFormat(pixelFormat: .yuyv, width: 640, height: 480, fps: 5)) { _ in }
        }
    }
}

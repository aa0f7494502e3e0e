// The synthetic camera's machine-readable timecode: 64 cells across the top rows, white and
// black references, 48 bits of capture time in milliseconds, 14 bits of sequence. Read back
// from the raw frame and from a decoded JPEG of it.

import CameraCore
import CaptureTestSupport
import Foundation
import JPEG
import SystemSupport
import Testing
@testable import Capture

@Suite struct TimecodeTests {
    static let ms: UInt64 = 1_764_100_000_123  // 2025-11-25, 48 bits wide enough until the year 10889
    static let sequence: UInt64 = 0x1_2345      // only its low 14 bits are drawn

    @Test(arguments: [(320, 240), (640, 480), (1280, 720)])
    func drawnCellsReadBackFromTheRawFrameAndThroughJPEG(_ width: Int, _ height: Int) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: width * height * 2, alignment: 16)
        defer { buffer.deallocate() }
        let canvas = YUYVCanvas(buffer, width: width, height: height)
        canvas.fill(x: 0, y: 0, width: width, height: height, YUV(r: 128, g: 128, b: 128))
        Timecode.draw(on: canvas, milliseconds: Self.ms, sequence: Self.sequence)
        let raw = Timecode.read(width: width, height: height) { x, y in Int(canvas.base[y * canvas.stride + 2 * x]) }
        #expect(raw?.milliseconds == Self.ms && raw?.sequence == Self.sequence & 0x3FFF)

        let jpeg = try JPEGEncoder().encodeYUYV(UnsafeRawBufferPointer(buffer), width: width, height: height,
                                                stride: width * 2, quality: 60)
        let rgb = try JPEGDecoder.decodeRGB(jpeg)
        let decoded = Timecode.read(width: width, height: height) { x, y in
            let p = (y * width + x) * 3
            return (299 * Int(rgb.pixels[p]) + 587 * Int(rgb.pixels[p + 1]) + 114 * Int(rgb.pixels[p + 2])) / 1000
        }
        #expect(decoded?.milliseconds == Self.ms && decoded?.sequence == Self.sequence & 0x3FFF)
        #expect(Timecode.rows(height: height) == max(8, height / 45))
    }

    @Test func aPictureWithoutReferencesReadsAsNone() {
        #expect(Timecode.read(width: 320, height: 240) { _, _ in 128 } == nil)
    }

    @Test func theSyntheticCameraDrawsEachFramesCaptureTimeAndSequence() throws {
        let camera = SyntheticCamera(id: "tc", position: .rear)
        camera.timecode = true
        let format = VideoFormat(pixelFormat: .yuyv, width: 320, height: 240, fps: 30)
        let seen = Locked<[(read: (milliseconds: UInt64, sequence: UInt64)?, ms: UInt64, sequence: UInt64)]>([])
        let arrived = DispatchSemaphore(value: 0)
        try camera.start(format: format) { frame in
            let bytes = frame.bytes
            let read = Timecode.read(width: 320, height: 240) { x, y in Int(bytes[y * 640 + 2 * x]) }
            seen.withLock { $0.append((read, UInt64((frame.timestamp * 1000).rounded(.down)), frame.sequence)) }
            arrived.signal()
        }
        for _ in 0..<5 { _ = arrived.wait(timeout: .now() + 5 * TestTime.scale) }
        camera.stop()
        let frames = seen.withLock { $0 }
        try #require(frames.count >= 5)
        for f in frames {
            #expect(f.read?.milliseconds == f.ms && f.read?.sequence == f.sequence & 0x3FFF)
        }
        #expect(Set(frames.map(\.ms)).count == frames.count, "each frame its own time")
    }
}

// A camera that sends MJPEG, like a webcam's compressed mode: the same JPEG of vertical
// bars (6 px wide at 640x480) every frame, so a test can tell the camera's own bytes from
// anything the server made of them.

import CameraCore
import Foundation
import JPEG
import SystemSupport

public final class MJPEGTestCamera: CaptureDevice, Sendable {
    public let descriptor = CameraDescriptor(id: "mjpeg", name: "MJPEG test camera", position: .external, kind: .v4l2)
    public let jpeg: [UInt8]
    private let running = Locked<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    public init() {
        var yuyv = [UInt8](repeating: 128, count: 640 * 480 * 2)
        for y in 0..<480 { for x in 0..<640 { yuyv[(y * 640 + x) * 2] = (x / 6) % 2 == 0 ? 235 : 16 } }
        jpeg = yuyv.withUnsafeBytes { try! JPEGEncoder().encodeYUYV($0, width: 640, height: 480, stride: 1280, quality: 90) }
    }

    /// A camera whose every frame is `jpeg` (640x480).
    public init(jpeg: [UInt8]) { self.jpeg = jpeg }

    public var formats: [FormatOption] { [FormatOption(pixelFormat: .mjpeg, width: 640, height: 480, fps: [30])] }
    public var capabilities: Capabilities { .fixed }

    public func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError) {
        stop()
        running.withLock { $0 = true }
        let jpeg = self.jpeg
        let thread = Thread { [self] in
            var sequence: UInt64 = 0
            while running.withLock({ $0 }) {
                jpeg.withUnsafeBytes { handler(RawFrame(format: format, bytes: $0, stride: 0, sequence: sequence, timestamp: Clock.now())) }
                sequence += 1
                usleep(33_000)
            }
            done.signal()
        }
        thread.start()
    }

    public func stop() {
        let was = running.withLock { r -> Bool in defer { r = false }; return r }
        if was { done.wait() }
    }
}

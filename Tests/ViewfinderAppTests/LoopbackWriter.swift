// Feeds a v4l2loopback device from the output side, as a camera would: the way to test
// MJPEG pass-through on a kernel without an MJPEG camera.

import CV4L2
import Foundation

final class LoopbackWriter: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(path: String, width: Int, height: Int, jpeg: [UInt8], fps: Double = 30) throws {
        fd = open(path, O_RDWR)
        guard fd >= 0 else { throw TestError("open \(path): errno \(errno)") }
        var f = v4l2_format()
        f.type = V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue
        f.fmt.pix.width = UInt32(width)
        f.fmt.pix.height = UInt32(height)
        f.fmt.pix.pixelformat = CV4L2_PIX_FMT_MJPEG
        f.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        f.fmt.pix.sizeimage = UInt32(jpeg.count)
        guard cv4l2_ioctl(fd, CV4L2_VIDIOC_S_FMT, &f) == 0 else {
            let e = errno
            close(fd)
            throw TestError("VIDIOC_S_FMT on \(path): errno \(e)")
        }
        let fd = self.fd
        Thread { [self] in
            // A producer paces itself like a sensor; this is not synchronization.
            while lock.withLock({ running }) {
                _ = jpeg.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                Thread.sleep(forTimeInterval: 1 / fps)
            }
            done.signal()
        }.start()
    }

    func stop() {
        lock.withLock { running = false }
        done.wait()
        close(fd)
    }
}

// The V4L2 ioctl funnel (as µStreamer's xioctl): SystemSupport's one syscall funnel
// (`Sys.valueOrErrno`: EINTR retried, errno read once) around the shim's ioctl, its failure
// a CameraError naming the request.

import CV4L2
import CameraCore
import Glibc
import SystemSupport

enum V4L2Call {
    static func ioctl<T>(_ fd: Int32, _ request: UInt, _ name: String, _ arg: inout T) throws(CameraError) {
        _ = try system { () throws(SystemError) in
            try withUnsafeMutablePointer(to: &arg) { p throws(SystemError) in
                try Sys.valueOrErrno(name) { cv4l2_ioctl(fd, request, UnsafeMutableRawPointer(p)) }
            }
        }
    }

    /// Runs system calls (`Sys`), a failure thrown as the camera's (`CameraError.system`, the
    /// SystemError its cause).
    static func system<R>(_ body: () throws(SystemError) -> R) throws(CameraError) -> R {
        do throws(SystemError) { return try body() } catch { throw .system(error) }
    }

    /// The fourcc for a pixel format, and back.
    static func fourcc(_ f: PixelFormat) -> UInt32 {
        switch f {
        case .yuyv: CV4L2_PIX_FMT_YUYV
        case .mjpeg: CV4L2_PIX_FMT_MJPEG
        case .nv12: CV4L2_PIX_FMT_NV12
        case .rgb24: CV4L2_PIX_FMT_RGB24
        case .grey: CV4L2_PIX_FMT_GREY
        case .uyvy: CV4L2_PIX_FMT_UYVY
        case .yvyu: CV4L2_PIX_FMT_YVYU
        case .bgr24: CV4L2_PIX_FMT_BGR24
        case .rgb565: CV4L2_PIX_FMT_RGB565
        case .nv16: CV4L2_PIX_FMT_NV16
        case .yu12: CV4L2_PIX_FMT_YUV420
        }
    }

    static func pixelFormat(_ fourcc: UInt32) -> PixelFormat? {
        PixelFormat.allCases.first { Self.fourcc($0) == fourcc }
    }

    /// A fixed-size C char array (e.g. `card[32]`) as a Swift string.
    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

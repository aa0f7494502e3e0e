// Pixel formats a camera can deliver, named by their V4L2 fourcc.

public enum PixelFormat: String, Sendable, Codable, CaseIterable {
    /// Packed 4:2:2 — Y0 U Y1 V; what webcams and the synthetic camera produce raw.
    case yuyv = "YUYV"
    /// Motion JPEG: each frame is already a JPEG.
    case mjpeg = "MJPG"
    case nv12 = "NV12"
    case rgb24 = "RGB3"
    case grey = "GREY"

    /// Bytes of one raw frame, or nil for compressed formats.
    public func frameBytes(width: Int, height: Int) -> Int? {
        switch self {
        case .yuyv: width * height * 2
        case .nv12: width * height * 3 / 2
        case .rgb24: width * height * 3
        case .grey: width * height
        case .mjpeg: nil
        }
    }
}

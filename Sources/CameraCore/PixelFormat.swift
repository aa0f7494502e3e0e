// Pixel formats a camera can deliver, named by their V4L2 fourcc.

public enum PixelFormat: String, Sendable, Codable, CaseIterable {
    /// Packed 4:2:2 — Y0 U Y1 V; what webcams and the synthetic camera produce raw.
    case yuyv = "YUYV"
    /// Motion JPEG: each frame is already a JPEG.
    case mjpeg = "MJPG"
    /// Y plane, then interleaved U/V at half width and half height (4:2:0).
    case nv12 = "NV12"
    /// Packed R G B, 3 bytes a pixel.
    case rgb24 = "RGB3"
    /// One 8-bit luma plane.
    case grey = "GREY"
    /// Packed 4:2:2 — U Y0 V Y1; what HDMI bridges such as the TC358743 deliver.
    case uyvy = "UYVY"
    /// Packed 4:2:2 — Y0 V Y1 U.
    case yvyu = "YVYU"
    /// Packed B G R, 3 bytes a pixel.
    case bgr24 = "BGR3"
    /// Packed 16-bit little-endian RGB 5:6:5 (red in the top bits).
    case rgb565 = "RGBP"
    /// Y plane, then interleaved U/V at half width and full height (4:2:2).
    case nv16 = "NV16"
    /// I420: Y plane, then U and V planes at half width and half height (4:2:0).
    case yu12 = "YU12"

    /// Bytes of one raw frame without row padding, or nil for compressed formats.
    public func frameBytes(width: Int, height: Int) -> Int? {
        switch self {
        case .yuyv, .uyvy, .yvyu, .rgb565, .nv16: width * height * 2
        case .nv12, .yu12: width * height * 3 / 2
        case .rgb24, .bgr24: width * height * 3
        case .grey: width * height
        case .mjpeg: nil
        }
    }

    /// Bytes of one unpadded row of the first plane (V4L2's `bytesperline` when the
    /// driver pads nothing), or nil for compressed formats. Chroma planes follow from it:
    /// NV12/NV16 use the same stride, YU12 half of it.
    public func bytesPerLine(width: Int) -> Int? {
        switch self {
        case .yuyv, .uyvy, .yvyu, .rgb565: width * 2
        case .rgb24, .bgr24: width * 3
        case .grey, .nv12, .nv16, .yu12: width
        case .mjpeg: nil
        }
    }
}

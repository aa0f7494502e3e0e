// Where each raw format keeps its samples, for the transformed (gathering) path, and what
// it is compressed as.

import CTurboJPEG
import CameraCore

struct RawLayout: Sendable {
    enum Output: Sendable {
        /// Y, U and V planes (or Y alone for TJSAMP_GRAY) to tjCompressFromYUVPlanes.
        case yuv(TJSAMP)
        /// Three bytes a pixel to tjCompress2 in this order.
        case packed(TJPF)
        /// RGB 5:6:5, widened to RGB24 while gathering.
        case rgb565
    }

    let output: Output
    /// Y, U, V for .yuv (Y alone for grey); the pixel itself for the RGB kinds. U and V
    /// always differ only in `base` (the gather relies on it).
    let planes: [SourcePlane]
    /// The shortest buffer that holds every row of every plane.
    let minimumBytes: Int

    /// Nil for formats that are not raw (MJPEG). `stride` is the first plane's bytes per
    /// row; NV12/NV16 chroma rows have the same, YU12's U and V planes half of it (V4L2's
    /// single-plane layouts).
    init?(_ format: PixelFormat, width w: Int, height h: Int, stride s: Int) {
        guard let minimum = Self.minimumBytes(format, width: w, height: h, stride: s) else { return nil }
        minimumBytes = minimum
        let ch = (h + 1) / 2, cs = s / 2
        let luma = SourcePlane(base: 0, xStep: 1, rowStride: s)
        /// Packed 4:2:2: byte offsets of Y0, U and V within each 4-byte pair of pixels.
        func packed422(y: Int, u: Int, v: Int) -> [SourcePlane] {
            [SourcePlane(base: y, xStep: 2, rowStride: s),
             SourcePlane(base: u, xShift: 1, xStep: 4, rowStride: s),
             SourcePlane(base: v, xShift: 1, xStep: 4, rowStride: s)]
        }
        /// Y plane, then one plane of interleaved U/V pairs at half width.
        func semiPlanar(yShift: Int) -> [SourcePlane] {
            [luma, SourcePlane(base: s * h, xShift: 1, xStep: 2, yShift: yShift, rowStride: s),
             SourcePlane(base: s * h + 1, xShift: 1, xStep: 2, yShift: yShift, rowStride: s)]
        }
        switch format {
        case .yuyv: (output, planes) = (.yuv(TJSAMP_422), packed422(y: 0, u: 1, v: 3))
        case .uyvy: (output, planes) = (.yuv(TJSAMP_422), packed422(y: 1, u: 0, v: 2))
        case .yvyu: (output, planes) = (.yuv(TJSAMP_422), packed422(y: 0, u: 3, v: 1))
        case .nv12: (output, planes) = (.yuv(TJSAMP_420), semiPlanar(yShift: 1))
        case .nv16: (output, planes) = (.yuv(TJSAMP_422), semiPlanar(yShift: 0))
        case .yu12:
            (output, planes) = (.yuv(TJSAMP_420), [
                luma, SourcePlane(base: s * h, xShift: 1, xStep: 1, yShift: 1, rowStride: cs),
                SourcePlane(base: s * h + cs * ch, xShift: 1, xStep: 1, yShift: 1, rowStride: cs)])
        case .grey: (output, planes) = (.yuv(TJSAMP_GRAY), [luma])
        case .rgb24: (output, planes) = (.packed(TJPF_RGB), [SourcePlane(base: 0, xStep: 3, rowStride: s)])
        case .bgr24: (output, planes) = (.packed(TJPF_BGR), [SourcePlane(base: 0, xStep: 3, rowStride: s)])
        case .rgb565: (output, planes) = (.rgb565, [SourcePlane(base: 0, xStep: 2, rowStride: s)])
        case .mjpeg: return nil
        }
    }

    /// The shortest buffer that holds every row of every plane (the last row need not be
    /// padded to the stride), or nil for compressed formats. No allocation: the identity
    /// paths check frames with it.
    static func minimumBytes(_ format: PixelFormat, width w: Int, height h: Int, stride s: Int) -> Int? {
        let cw = (w + 1) / 2, ch = (h + 1) / 2, cs = s / 2
        switch format {
        case .yuyv, .uyvy, .yvyu: return s * (h - 1) + cw * 4
        case .nv12: return s * h + s * (ch - 1) + cw * 2
        case .nv16: return s * h + s * (h - 1) + cw * 2
        case .yu12: return s * h + cs * ch + cs * (ch - 1) + cw
        case .grey: return s * (h - 1) + w
        case .rgb24, .bgr24: return s * (h - 1) + w * 3
        case .rgb565: return s * (h - 1) + w * 2
        case .mjpeg: return nil
        }
    }
}

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
    /// Y, U, V for .yuv (Y alone for grey); the pixel itself for the RGB kinds.
    let planes: [SourcePlane]
    /// The shortest buffer that holds every row of every plane.
    let minimumBytes: Int

    /// Nil for formats that are not raw (MJPEG).
    init?(_ format: PixelFormat, width w: Int, height h: Int, stride s: Int) {
        /// Packed 4:2:2: byte offsets of Y0, U and V within each 4-byte pair of pixels.
        func packed422(y: Int, u: Int, v: Int) -> [SourcePlane] {
            [SourcePlane(base: y, xStep: 2, rowStride: s),
             SourcePlane(base: u, xShift: 1, xStep: 4, rowStride: s),
             SourcePlane(base: v, xShift: 1, xStep: 4, rowStride: s)]
        }
        switch format {
        case .yuyv:
            (output, planes, minimumBytes) = (.yuv(TJSAMP_422), packed422(y: 0, u: 1, v: 3), s * (h - 1) + w * 2)
        default:
            return nil
        }
    }
}

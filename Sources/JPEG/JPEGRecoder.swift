// MJPEG with digital zoom: decoded, cropped and scaled back to the frame's size while
// gathered, and encoded again — as every raw format's zoom keeps the output size. Only
// then: without a transform the camera's JPEG passes through untouched, and rotation or
// mirroring alone stay lossless (JPEGTransformer). One per capture thread: it owns a
// decompressor and a reusable RGB buffer.

import CTurboJPEG
import CameraCore

public final class JPEGRecoder {
    private var handle: tjhandle
    private var rgb: [UInt8] = []

    public init() throws(JPEGError) {
        guard let h = tjInitDecompress() else { throw JPEGError.last("tjInitDecompress", nil) }
        handle = h
    }

    deinit { tjDestroy(handle) }

    /// Decodes `jpeg` and encodes it with `encoder` at `quality` through `transform`.
    public func recode(_ jpeg: UnsafeRawBufferPointer, with encoder: JPEGEncoder, quality: Int,
                       transform: FrameTransform) throws(JPEGError) -> EncodedImage {
        do { return try decodeAndEncode(jpeg, with: encoder, quality: quality, transform: transform) } catch {
            // A handle whose header read failed reads no later header (libturbojpeg 2.1): start afresh.
            if let fresh = tjInitDecompress() { tjDestroy(handle); handle = fresh }
            throw error
        }
    }

    private func decodeAndEncode(_ jpeg: UnsafeRawBufferPointer, with encoder: JPEGEncoder, quality: Int,
                                 transform: FrameTransform) throws(JPEGError) -> EncodedImage {
        let (src, w, h, _) = try JPEGInput.header(handle, jpeg)
        let count = Int(w) * Int(h) * 3
        if rgb.count != count { rgb = [UInt8](repeating: 0, count: count) }
        return try rgb.withUnsafeMutableBufferPointer { dst throws(JPEGError) -> EncodedImage in
            guard tjDecompress2(handle, src, UInt(jpeg.count), dst.baseAddress, w, 0, h, Int32(TJPF_RGB.rawValue),
                                TJFLAG_FASTDCT) == 0 else { throw JPEGError.last("tjDecompress2", handle) }
            return try encoder.encode(UnsafeRawBufferPointer(dst), format: .rgb24, width: Int(w), height: Int(h),
                                      stride: Int(w) * 3, quality: quality, transform: transform)
        }
    }
}

// The one entry point for raw camera frames: every raw format, with or without zoom,
// rotation and mirroring. Without a transform each format takes its cheapest route into
// libturbojpeg; with one, every format goes through the same gather (JPEGEncoder+Gather).

import CPixels
import CTurboJPEG
import CameraCore

extension JPEGEncoder {
    /// Encodes one raw frame. `stride` is the first plane's bytes per row (V4L2's
    /// `bytesperline`); the result's width and height are after the transform. Output
    /// subsampling follows the source: 4:2:2 for 4:2:2 and RGB sources, 4:2:0 for NV12 and
    /// YU12, greyscale for GREY. Throws for MJPEG (not raw) and for frames too short.
    public func encode(_ bytes: UnsafeRawBufferPointer, format: PixelFormat, width: Int, height: Int, stride: Int,
                       quality: Int, transform: FrameTransform = .identity) throws(JPEGError) -> EncodedImage {
        guard width > 0, height > 0, let row = format.bytesPerLine(width: width),
              let minimum = RawLayout.minimumBytes(format, width: width, height: height, stride: stride) else {
            throw JPEGError(call: "encode", message: "\(format.rawValue) \(width)x\(height) is not a raw frame")
        }
        guard stride >= row, bytes.count >= minimum else {
            throw JPEGError(call: "encode", message: "short \(format.rawValue) frame: \(bytes.count) bytes at stride \(stride), \(minimum) needed")
        }
        if transform.isIdentity,
           let jpeg = try encodeDirect(bytes, format: format, width: width, height: height, stride: stride, quality: quality) {
            return EncodedImage(bytes: jpeg, jpegRange: emitted, width: width, height: height)
        }
        let layout = RawLayout(format, width: width, height: height, stride: stride)!
        return try encodeGathered(bytes, format: format, layout: layout, width: width, height: height,
                                  stride: stride, quality: quality, transform: transform)
    }

    /// The untransformed routes, or nil where only the gather applies (RGB 5:6:5, which
    /// libturbojpeg cannot read, and odd sizes the plane splitters do not handle).
    private func encodeDirect(_ src: UnsafeRawBufferPointer, format: PixelFormat, width w: Int, height h: Int,
                              stride s: Int, quality q: Int) throws(JPEGError) -> [UInt8]? {
        let evenW = w % 2 == 0, evenH = h % 2 == 0
        switch format {
        case .yuyv where evenW && src.count >= s * h:
            return try encodeYUYV(src, width: w, height: h, stride: s, quality: q)  // the benchmarked path
        case .uyvy where evenW:
            return try encodePacked422(src, width: w, height: h, stride: s, quality: q, y0: 1, u: 0, v: 2)
        case .yvyu where evenW:
            return try encodePacked422(src, width: w, height: h, stride: s, quality: q, y0: 0, u: 3, v: 1)
        case .nv12 where evenW && evenH:
            return try encodeSemiPlanar(src, width: w, height: h, stride: s, chromaRows: h / 2, subsampling: TJSAMP_420, quality: q)
        case .nv16 where evenW:
            return try encodeSemiPlanar(src, width: w, height: h, stride: s, chromaRows: h, subsampling: TJSAMP_422, quality: q)
        case .yu12 where evenW && evenH:
            // Already three planes: libturbojpeg reads them in place.
            let y = src.baseAddress!.assumingMemoryBound(to: UInt8.self), cs = s / 2
            return try compressPlanes([y, y + s * h, y + s * h + cs * h / 2], strides: [Int32(s), Int32(cs), Int32(cs)],
                                      width: w, height: h, subsampling: TJSAMP_420, quality: q)
        case .grey:
            return try encodeGrey(src, width: w, height: h, stride: s, quality: q)
        case .rgb24:
            return try encodeRGB(src, width: w, height: h, stride: s, quality: q)
        case .bgr24:
            return try compressPacked(src.baseAddress!.assumingMemoryBound(to: UInt8.self), width: w, pitch: s,
                                      height: h, order: TJPF_BGR, quality: q)
        default:
            return nil
        }
    }

    /// UYVY and YVYU: YUYV's split (CPixels) with their byte order.
    private func encodePacked422(_ src: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int, quality: Int,
                                 y0: Int, u: Int, v: Int) throws(JPEGError) -> [UInt8] {
        let cw = width / 2, ySize = width * height, cSize = cw * height
        return try withScratch(ySize + 2 * cSize) { yPlane throws(JPEGError) in
            let uPlane = yPlane + ySize, vPlane = uPlane + cSize
            vf_split_packed422(src.baseAddress!.assumingMemoryBound(to: UInt8.self), stride, Int32(width), Int32(height),
                               Int32(y0), Int32(u), Int32(v), yPlane, uPlane, vPlane)
            return try compressPlanes422(y: yPlane, u: uPlane, v: vPlane, yStride: width, chromaWidth: cw,
                                         width: width, height: height, quality: quality)
        }
    }
}

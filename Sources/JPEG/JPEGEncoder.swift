// Encodes raw camera frames to JPEG with libturbojpeg. One encoder per thread: it owns a
// tjhandle and reusable plane and output buffers, so steady-state encoding allocates only
// the final [UInt8] handed to viewers (framed as the wire part when FrameEncoder asks).

import CPixels
import CTurboJPEG
import CameraCore

/// A JPEG and its size after the transform (90° and 270° swap width and height); framed
/// (JPEGFraming), the bytes hold the wire part and the JPEG is the part's `jpegRange`.
public struct EncodedImage: Sendable {
    public let bytes: [UInt8]
    public let jpegRange: Swift.Range<Int>
    public let width: Int
    public let height: Int

    public init(jpeg: [UInt8], width: Int, height: Int) {
        self.init(bytes: jpeg, jpegRange: jpeg.indices, width: width, height: height)
    }

    public init(bytes: [UInt8], jpegRange: Swift.Range<Int>, width: Int, height: Int) {
        self.bytes = bytes
        self.jpegRange = jpegRange
        self.width = width
        self.height = height
    }

    /// The JPEG alone (a copy only when it is framed).
    public var jpeg: [UInt8] { jpegRange == bytes.indices ? bytes : Array(bytes[jpegRange]) }
}

public final class JPEGEncoder {
    private let handle: tjhandle
    private var planes: [UInt8] = []
    /// The transformed path's tables, kept while geometry and transform stay the same.
    var gatherCache: (key: GatherKey, tables: [GatherTables])?
    private var output: UnsafeMutablePointer<UInt8>?
    private var outputCapacity = 0
    /// `.s420`: 4:2:2 and RGB sources are compressed as 4:2:0 (every other chroma row).
    public var subsampling: ChromaSubsampling = .s422
    /// Laid around each JPEG as it leaves libturbojpeg's buffer (FrameEncoder sets it per
    /// frame); `emitted` is where the last JPEG sits in what was returned.
    var framing: JPEGFraming?
    private(set) var emitted: Swift.Range<Int> = 0..<0

    public init() throws(JPEGError) {
        guard let h = tjInitCompress() else { throw JPEGError.last("tjInitCompress", nil) }
        handle = h
    }

    deinit {
        if let output { tjFree(output) }
        tjDestroy(handle)
    }

    /// Encodes a packed YUYV (4:2:2) image. libturbojpeg 2.1 has no packed-YUYV input, so
    /// the frame is split into Y, U and V planes and compressed without colour conversion.
    public func encodeYUYV(_ src: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int,
                           quality: Int, transform: FrameTransform = .identity) throws(JPEGError) -> [UInt8] {
        precondition(width % 2 == 0 && src.count >= stride * height, "short YUYV frame")
        if !transform.isIdentity {
            return try encodeGathered(src, format: .yuyv, layout: RawLayout(.yuyv, width: width, height: height, stride: stride)!,
                                      width: width, height: height, stride: stride, quality: quality, transform: transform).jpeg
        }
        return try compress422(width: width, height: height, quality: quality) { y, u, v in
            // SSE2/NEON: the de-interleave at memory speed (CPixels).
            vf_split_packed422(src.baseAddress!.assumingMemoryBound(to: UInt8.self), stride, Int32(width), Int32(height),
                               0, 1, 3, y, u, v)
        }
    }

    /// Sizes the reusable planes for a 4:2:2 image, lets `fill` write Y, U and V, compresses.
    private func compress422(width: Int, height: Int, quality: Int,
                             fill: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>) -> Void)
        throws(JPEGError) -> [UInt8] {
        let chromaWidth = width / 2
        let ySize = width * height, cSize = chromaWidth * height
        if planes.count != ySize + 2 * cSize { planes = [UInt8](repeating: 0, count: ySize + 2 * cSize) }
        return try planes.withUnsafeMutableBufferPointer { p throws(JPEGError) -> [UInt8] in
            let y = p.baseAddress!, u = y + ySize, v = u + cSize
            fill(y, u, v)
            return try compressPlanes422(y: y, u: u, v: v, yStride: width, chromaWidth: chromaWidth,
                                         width: width, height: height, quality: quality)
        }
    }

    /// 4:2:2 planes compressed as 4:2:2, or as 4:2:0 when `subsampling` asks for it: the
    /// chroma planes are read every other row (twice their stride), no copy.
    func compressPlanes422(y: UnsafePointer<UInt8>, u: UnsafePointer<UInt8>, v: UnsafePointer<UInt8>, yStride: Int,
                           chromaWidth: Int, width: Int, height: Int, quality: Int) throws(JPEGError) -> [UInt8] {
        let halve = subsampling == .s420 && height % 2 == 0
        let cs = Int32(halve ? 2 * chromaWidth : chromaWidth)
        return try compressPlanes([y, u, v], strides: [Int32(yStride), cs, cs], width: width, height: height,
                                  subsampling: halve ? TJSAMP_420 : TJSAMP_422, quality: quality)
    }

    /// Encodes NV12 (a Y plane, then interleaved U/V at half resolution both ways): the UV
    /// plane is split and the three planes compressed as 4:2:0.
    public func encodeNV12(_ src: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int,
                           quality: Int) throws(JPEGError) -> [UInt8] {
        precondition(width % 2 == 0 && height % 2 == 0 && src.count >= stride * height * 3 / 2, "short NV12 frame")
        return try encodeSemiPlanar(src, width: width, height: height, stride: stride, chromaRows: height / 2,
                                    subsampling: TJSAMP_420, quality: quality)
    }

    /// NV12 and NV16: the Y plane is used in place, the interleaved UV plane (stride as Y's,
    /// `chromaRows` rows) is split into U and V.
    func encodeSemiPlanar(_ src: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int, chromaRows ch: Int,
                          subsampling: TJSAMP, quality: Int) throws(JPEGError) -> [UInt8] {
        let cw = width / 2
        if planes.count != 2 * cw * ch { planes = [UInt8](repeating: 0, count: 2 * cw * ch) }
        return try planes.withUnsafeMutableBufferPointer { p throws(JPEGError) -> [UInt8] in
            let u = p.baseAddress!, v = u + cw * ch
            let s = src.baseAddress!.assumingMemoryBound(to: UInt8.self)
            vf_split_uv(s + stride * height, stride, Int32(cw), Int32(ch), u, v)
            if subsampling == TJSAMP_422 {
                return try compressPlanes422(y: s, u: u, v: v, yStride: stride, chromaWidth: cw,
                                             width: width, height: height, quality: quality)
            }
            return try compressPlanes([s, UnsafePointer(u), UnsafePointer(v)],
                                      strides: [Int32(stride), Int32(cw), Int32(cw)],
                                      width: width, height: height, subsampling: subsampling, quality: quality)
        }
    }

    /// Encodes packed 24-bit RGB (colour conversion by libturbojpeg), 4:2:2 like the rest.
    public func encodeRGB(_ src: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int,
                          quality: Int) throws(JPEGError) -> [UInt8] {
        try compressPacked(src.baseAddress!.assumingMemoryBound(to: UInt8.self), width: width, pitch: stride,
                           height: height, order: TJPF_RGB, quality: quality)
    }

    /// Encodes an 8-bit greyscale image.
    public func encodeGrey(_ src: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int,
                           quality: Int) throws(JPEGError) -> [UInt8] {
        let y = src.baseAddress!.assumingMemoryBound(to: UInt8.self)
        return try compressPlanes([y], strides: [Int32(stride)], width: width, height: height,
                                  subsampling: TJSAMP_GRAY, quality: quality)
    }

    /// Grows the reusable output buffer to libturbojpeg's worst case for this image.
    private func ensureOutput(width: Int, height: Int, subsampling: TJSAMP) {
        let bound = Int(tjBufSize(Int32(width), Int32(height), Int32(subsampling.rawValue)))
        guard bound > outputCapacity else { return }
        if let output { tjFree(output) }
        output = tjAlloc(Int32(bound))
        outputCapacity = output == nil ? 0 : bound
    }

    /// The reusable scratch buffer, grown to at least `count` bytes.
    func withScratch(_ count: Int, _ body: (UnsafeMutablePointer<UInt8>) throws(JPEGError) -> [UInt8]) throws(JPEGError) -> [UInt8] {
        if planes.count < count { planes = [UInt8](repeating: 0, count: count) }
        return try planes.withUnsafeMutableBufferPointer { p throws(JPEGError) -> [UInt8] in try body(p.baseAddress!) }
    }

    /// Packed 3-byte pixels in `order` (libturbojpeg converts to YCbCr), 4:2:2 like the rest.
    func compressPacked(_ pixels: UnsafePointer<UInt8>, width: Int, pitch: Int, height: Int, order: TJPF,
                        quality: Int) throws(JPEGError) -> [UInt8] {
        let sampling = subsampling == .s420 ? TJSAMP_420 : TJSAMP_422
        ensureOutput(width: width, height: height, subsampling: sampling)
        var out: UnsafeMutablePointer<UInt8>? = output
        var size: UInt = UInt(outputCapacity)
        let rc = tjCompress2(handle, pixels, Int32(width), Int32(pitch), Int32(height), Int32(order.rawValue), &out, &size,
                             Int32(sampling.rawValue), Int32(min(max(quality, 1), 100)), TJFLAG_NOREALLOC | TJFLAG_FASTDCT)
        guard rc == 0, let out else { throw JPEGError.last("tjCompress2", handle) }
        return emit(out, Int(size))
    }

    func compressPlanes(_ planes: [UnsafePointer<UInt8>], strides: [Int32], width: Int,
                                height: Int, subsampling: TJSAMP, quality: Int) throws(JPEGError) -> [UInt8] {
        ensureOutput(width: width, height: height, subsampling: subsampling)
        var out: UnsafeMutablePointer<UInt8>? = output
        var size: UInt = UInt(outputCapacity)
        var planePointers: [UnsafePointer<UInt8>?] = planes
        var planeStrides = strides
        let q = Int32(min(max(quality, 1), 100))
        let rc = tjCompressFromYUVPlanes(handle, &planePointers, Int32(width), &planeStrides,
                                         Int32(height), Int32(subsampling.rawValue), &out, &size, q,
                                         TJFLAG_NOREALLOC | TJFLAG_FASTDCT)
        guard rc == 0, let out else { throw JPEGError.last("tjCompressFromYUVPlanes", handle) }
        return emit(out, Int(size))
    }

    /// The one copy out of libturbojpeg's buffer: the JPEG alone, or framed.
    private func emit(_ out: UnsafeMutablePointer<UInt8>, _ count: Int) -> [UInt8] {
        let jpeg = UnsafeRawBufferPointer(start: out, count: count)
        guard let framing else {
            emitted = 0..<count
            return Array(jpeg)
        }
        let (bytes, range) = framing.wrap(jpeg)
        emitted = range
        return bytes
    }
}

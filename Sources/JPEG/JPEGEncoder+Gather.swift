// The transformed path for every raw format: gather the output through SampleTables (zoom,
// rotation, mirror) into scratch planes, then compress. The tables are kept while the
// frame geometry and transform stay the same, so a steady stream builds them once.

import CTurboJPEG
import CameraCore

/// What the cached tables were built for.
struct GatherKey: Equatable {
    var format: PixelFormat
    var width: Int
    var height: Int
    var stride: Int
    var transform: FrameTransform
    var subsampling: ChromaSubsampling
}

extension JPEGEncoder {
    func encodeGathered(_ src: UnsafeRawBufferPointer, format: PixelFormat, layout: RawLayout, width: Int,
                        height: Int, stride: Int, quality: Int, transform: FrameTransform) throws(JPEGError) -> EncodedImage {
        let key = GatherKey(format: format, width: width, height: height, stride: stride, transform: transform,
                            subsampling: subsampling)
        let (outW, outH) = transform.outputSize(width: width, height: height)
        // 4:2:0 asked for: a 4:2:2 source is gathered with half the chroma rows.
        let output: RawLayout.Output = if case .yuv(let sub) = layout.output, sub == TJSAMP_422, subsampling == .s420, outH % 2 == 0 {
            .yuv(TJSAMP_420)
        } else {
            layout.output
        }
        if gatherCache?.key != key {
            gatherCache = (key, Self.tables(layout, output: output, width: width, height: height, transform: transform))
        }
        let tables = gatherCache!.tables
        let s = src.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let jpeg: [UInt8]
        switch output {
        case .yuv(let subsampling) where tables.count == 2:
            let (luma, chroma) = (tables[0], tables[1])
            let lumaSize = luma.width * luma.height, chromaSize = chroma.width * chroma.height
            jpeg = try withScratch(lumaSize + 2 * chromaSize) { y throws(JPEGError) in
                let u = y + lumaSize, v = u + chromaSize
                PixelGather.yuv(s, luma: luma, chroma: chroma, vOffset: layout.planes[2].base - layout.planes[1].base,
                                chromaRowStep: subsampling == TJSAMP_420 ? 2 : 1, into: y, u, v)
                return try compressPlanes([UnsafePointer(y), UnsafePointer(u), UnsafePointer(v)],
                                          strides: [Int32(luma.width), Int32(chroma.width), Int32(chroma.width)],
                                          width: outW, height: outH, subsampling: subsampling, quality: quality)
            }
        case .yuv(let subsampling):  // greyscale: the one luma plane
            jpeg = try withScratch(outW * outH) { y throws(JPEGError) in
                PixelGather.bytes(s, tables[0], into: y)
                return try compressPlanes([UnsafePointer(y)], strides: [Int32(outW)], width: outW, height: outH,
                                          subsampling: subsampling, quality: quality)
            }
        case .packed(let order):
            jpeg = try withScratch(outW * outH * 3) { p throws(JPEGError) in
                PixelGather.triples(s, tables[0], into: p)
                return try compressPacked(p, width: outW, pitch: outW * 3, height: outH, order: order, quality: quality)
            }
        case .rgb565:
            jpeg = try withScratch(outW * outH * 3) { p throws(JPEGError) in
                PixelGather.rgb565(s, tables[0], into: p)
                return try compressPacked(p, width: outW, pitch: outW * 3, height: outH, order: TJPF_RGB, quality: quality)
            }
        }
        return EncodedImage(bytes: jpeg, jpegRange: emitted, width: outW, height: outH)
    }

    /// The tables for the luma plane and, for colour YUV, one set shared by U and V
    /// (subsampled as the output is: 4:2:2 halves columns, 4:2:0 also rows); a single set
    /// for greyscale and packed RGB.
    static func tables(_ layout: RawLayout, output: RawLayout.Output, width: Int, height: Int,
                       transform: FrameTransform) -> [GatherTables] {
        let s = SampleTables(width: width, height: height, transform: transform)
        guard case .yuv(let subsampling) = output, layout.planes.count == 3 else {
            return [GatherTables(s, layout.planes[0])]
        }
        return [GatherTables(s, layout.planes[0]),
                GatherTables(s, layout.planes[1], columnStep: 2, rowStep: subsampling == TJSAMP_420 ? 2 : 1)]
    }
}

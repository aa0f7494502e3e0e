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
}

extension JPEGEncoder {
    func encodeGathered(_ src: UnsafeRawBufferPointer, format: PixelFormat, layout: RawLayout, width: Int,
                        height: Int, stride: Int, quality: Int, transform: FrameTransform) throws(JPEGError) -> EncodedImage {
        let key = GatherKey(format: format, width: width, height: height, stride: stride, transform: transform)
        if gatherCache?.key != key { gatherCache = (key, Self.tables(layout, width: width, height: height, transform: transform)) }
        let tables = gatherCache!.tables
        let (outW, outH) = transform.outputSize(width: width, height: height)
        let s = src.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let jpeg: [UInt8]
        switch layout.output {
        case .yuv(let subsampling):
            jpeg = try withScratch(tables.reduce(0) { $0 + $1.width * $1.height }) { p throws(JPEGError) in
                var pointers: [UnsafePointer<UInt8>] = [], strides: [Int32] = []
                var d = p
                for t in tables {
                    PixelGather.bytes(s, t, into: d)
                    pointers.append(UnsafePointer(d)); strides.append(Int32(t.width))
                    d += t.width * t.height
                }
                return try compressPlanes(pointers, strides: strides, width: outW, height: outH,
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
        return EncodedImage(jpeg: jpeg, width: outW, height: outH)
    }

    /// One GatherTables per output plane: full-size Y, then U and V subsampled as the
    /// output is (4:2:2 halves columns, 4:2:0 also rows); a single table for packed RGB.
    static func tables(_ layout: RawLayout, width: Int, height: Int, transform: FrameTransform) -> [GatherTables] {
        let s = SampleTables(width: width, height: height, transform: transform)
        guard case .yuv(let subsampling) = layout.output, layout.planes.count == 3 else {
            return [GatherTables(s, layout.planes[0])]
        }
        let rowStep = subsampling == TJSAMP_420 ? 2 : 1
        return [GatherTables(s, layout.planes[0]),
                GatherTables(s, layout.planes[1], columnStep: 2, rowStep: rowStep),
                GatherTables(s, layout.planes[2], columnStep: 2, rowStep: rowStep)]
    }
}

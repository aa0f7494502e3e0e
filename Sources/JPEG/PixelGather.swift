// The inner loops of the transformed path: read samples through GatherTables into the
// encoder's scratch planes. One loop per kind of sample: a byte (any Y, U or V), three bytes
// (RGB or BGR, kept in source order) and a 16-bit RGB 5:6:5 pixel widened to RGB24.

enum PixelGather {
    /// One byte a sample, into a plane of `t.width` bytes a row.
    static func bytes(_ src: UnsafePointer<UInt8>, _ t: GatherTables, into dst: UnsafeMutablePointer<UInt8>) {
        t.columns.withUnsafeBufferPointer { col in
            for py in 0..<t.height {
                let r = src + t.rows[py], d = dst + py * t.width
                for px in 0..<t.width { d[px] = r[col[px]] }
            }
        }
    }

    /// Y, U and V in one pass over the output rows, so a turned frame's source columns are
    /// walked once rather than once per plane. V shares U's tables: in every layout it
    /// differs from U only by a constant byte offset, `vOffset`. With 4:2:0 output a chroma
    /// row is written every `chromaRowStep` luma rows.
    static func yuv(_ src: UnsafePointer<UInt8>, luma: GatherTables, chroma: GatherTables, vOffset: Int, chromaRowStep: Int,
                    into y: UnsafeMutablePointer<UInt8>, _ u: UnsafeMutablePointer<UInt8>, _ v: UnsafeMutablePointer<UInt8>) {
        let cw = chroma.width
        luma.columns.withUnsafeBufferPointer { col in
            chroma.columns.withUnsafeBufferPointer { colC in
                for py in 0..<luma.height {
                    let r = src + luma.rows[py], d = y + py * luma.width
                    for px in 0..<luma.width { d[px] = r[col[px]] }
                    guard py % chromaRowStep == 0 else { continue }
                    let cy = py / chromaRowStep
                    let rc = src + chroma.rows[cy], du = u + cy * cw, dv = v + cy * cw
                    for px in 0..<cw {
                        let c = rc + colC[px]
                        du[px] = c[0]; dv[px] = c[vOffset]
                    }
                }
            }
        }
    }

    /// Three bytes a pixel, packed into rows of `3 * t.width` bytes.
    static func triples(_ src: UnsafePointer<UInt8>, _ t: GatherTables, into dst: UnsafeMutablePointer<UInt8>) {
        t.columns.withUnsafeBufferPointer { col in
            for py in 0..<t.height {
                let r = src + t.rows[py]
                var d = dst + py * t.width * 3
                for px in 0..<t.width {
                    let p = r + col[px]
                    d[0] = p[0]; d[1] = p[1]; d[2] = p[2]
                    d += 3
                }
            }
        }
    }

    /// Little-endian RGB 5:6:5 to packed RGB24. Each field is widened by repeating its top
    /// bits, so 0 stays 0 and full scale becomes 255.
    static func rgb565(_ src: UnsafePointer<UInt8>, _ t: GatherTables, into dst: UnsafeMutablePointer<UInt8>) {
        t.columns.withUnsafeBufferPointer { col in
            for py in 0..<t.height {
                let r = src + t.rows[py]
                var d = dst + py * t.width * 3
                for px in 0..<t.width {
                    let p = r + col[px]
                    let v = UInt16(p[0]) | UInt16(p[1]) << 8
                    let r5 = UInt8(v >> 11), g6 = UInt8((v >> 5) & 0x3F), b5 = UInt8(v & 0x1F)
                    d[0] = r5 << 3 | r5 >> 2; d[1] = g6 << 2 | g6 >> 4; d[2] = b5 << 3 | b5 >> 2
                    d += 3
                }
            }
        }
    }
}

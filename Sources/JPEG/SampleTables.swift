// Zoom, rotation and mirroring as a nearest-neighbour gather. Every output pixel reads one
// source sample whose byte offset separates into a part that depends only on the output
// column and a part that depends only on the output row, so two small tables per plane
// replace per-pixel arithmetic in the inner loop.

import CameraCore

/// Which source pixel each output column and row samples, for one frame size and transform:
/// output pixel (ox, oy) samples source (columns[ox], rows[oy]), or (rows[oy], columns[ox])
/// when `transposed`.
struct SampleTables: Sendable {
    let outWidth: Int
    let outHeight: Int
    /// 90° and 270°: output columns walk source rows, output rows walk source columns.
    let transposed: Bool
    /// Per output column: a source x, or a source y when transposed.
    let columns: [Int]
    /// Per output row: a source y, or a source x when transposed.
    let rows: [Int]

    /// Zoom is a crop (about `t.center`) scaled back to the frame's size; rotation is clockwise and the
    /// mirror applies after it (it flips the output's columns), as tjTransform does for MJPEG.
    init(width: Int, height: Int, transform t: FrameTransform) {
        (outWidth, outHeight) = t.outputSize(width: width, height: height)
        let zoom = max(1, t.zoom)
        let cropW = Double(width) / zoom, cropH = Double(height) / zoom
        let x0 = FrameTransform.cropStart(extent: Double(width), crop: cropW, center: t.center.x)
        let y0 = FrameTransform.cropStart(extent: Double(height), crop: cropH, center: t.center.y)
        // Pixel centres: output sample a of n along an axis reads the crop at (a + 0.5) / n.
        func sx(_ a: Int, _ n: Int) -> Int { min(width - 1, Int(x0 + (Double(a) + 0.5) * cropW / Double(n))) }
        func sy(_ b: Int, _ n: Int) -> Int { min(height - 1, Int(y0 + (Double(b) + 0.5) * cropH / Double(n))) }
        let outW = outWidth, outH = outHeight
        transposed = t.rotation == 90 || t.rotation == 270
        columns = (0..<outW).map { ox in
            let u = t.mirrored ? outW - 1 - ox : ox
            switch t.rotation {
            case 90: return sy(outW - 1 - u, outW)
            case 270: return sy(u, outW)
            case 180: return sx(outW - 1 - u, outW)
            default: return sx(u, outW)
            }
        }
        rows = (0..<outH).map { oy in
            switch t.rotation {
            case 90: return sx(oy, outH)
            case 270: return sx(outH - 1 - oy, outH)
            case 180: return sy(outH - 1 - oy, outH)
            default: return sy(oy, outH)
            }
        }
    }
}

/// Where one component of a raw format lives: the sample for source pixel (x, y) is at
/// byte base + (x >> xShift) * xStep + (y >> yShift) * rowStride. Subsampled chroma shifts
/// its coordinates; packed formats step over the other components.
struct SourcePlane: Sendable {
    var base: Int
    var xShift = 0
    var xStep: Int
    var yShift = 0
    var rowStride: Int

    func x(_ x: Int) -> Int { (x >> xShift) * xStep }
    func y(_ y: Int) -> Int { (y >> yShift) * rowStride }
}

/// Byte offsets for filling one output plane of width × height: its sample (px, py) is
/// src[rows[py] + columns[px]]. A subsampled output plane (chroma) takes output pixel
/// (px * columnStep, py * rowStep).
struct GatherTables: Sendable {
    let width: Int
    let height: Int
    let columns: [Int]
    let rows: [Int]

    init(_ s: SampleTables, _ plane: SourcePlane, columnStep: Int = 1, rowStep: Int = 1) {
        width = (s.outWidth + columnStep - 1) / columnStep
        height = (s.outHeight + rowStep - 1) / rowStep
        columns = (0..<width).map { px in
            let a = s.columns[min(px * columnStep, s.outWidth - 1)]
            return s.transposed ? plane.y(a) : plane.x(a)
        }
        rows = (0..<height).map { py in
            let b = s.rows[min(py * rowStep, s.outHeight - 1)]
            return plane.base + (s.transposed ? plane.x(b) : plane.y(b))
        }
    }
}

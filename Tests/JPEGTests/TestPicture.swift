import CameraCore

/// A known picture for checking where pixels end up: four quadrants (red top-left, green
/// top-right, blue bottom-left, white bottom-right) and a yellow block in the centre an
/// eighth of the frame from it each way. Edges fall on even pixels, so no 4:2:x chroma
/// sample straddles two colours.
enum TestPicture {
    typealias RGB = (r: Int, g: Int, b: Int)
    static let red: RGB = (255, 0, 0), green: RGB = (0, 255, 0), blue: RGB = (0, 0, 255)
    static let white: RGB = (255, 255, 255), yellow: RGB = (255, 255, 0)

    /// The colour at normalised coordinates (0...1 across and down).
    static func colour(x: Double, y: Double) -> RGB {
        if abs(x - 0.5) < 0.125 && abs(y - 0.5) < 0.125 { return yellow }
        switch (x < 0.5, y < 0.5) {
        case (true, true): return red
        case (false, true): return green
        case (true, false): return blue
        case (false, false): return white
        }
    }

    static func colour(_ px: Int, _ py: Int, width: Int, height: Int) -> RGB {
        colour(x: (Double(px) + 0.5) / Double(width), y: (Double(py) + 0.5) / Double(height))
    }

    /// Full-range BT.601 (JFIF), what libjpeg assumes.
    static func ycbcr(_ c: RGB) -> (y: UInt8, u: UInt8, v: UInt8) {
        let r = Double(c.r), g = Double(c.g), b = Double(c.b)
        func clamp(_ v: Double) -> UInt8 { UInt8(max(0, min(255, v.rounded()))) }
        return (clamp(0.299 * r + 0.587 * g + 0.114 * b),
                clamp(128 - 0.168736 * r - 0.331264 * g + 0.5 * b),
                clamp(128 + 0.5 * r - 0.418688 * g - 0.081312 * b))
    }

    /// The picture in `format`, with `padding` bytes of junk after every row of the first
    /// plane (half as many in YU12's chroma planes), so a stride bug shows as wrong colours.
    static func frame(_ format: PixelFormat, width w: Int, height h: Int, padding: Int = 32) -> (bytes: [UInt8], stride: Int) {
        let s = format.bytesPerLine(width: w)! + padding, cs = s / 2, ch = (h + 1) / 2
        let size: Int
        switch format {
        case .nv12: size = s * h + s * ch
        case .nv16: size = s * h * 2
        case .yu12: size = s * h + 2 * cs * ch
        default: size = s * h
        }
        var out = [UInt8](repeating: 0xA5, count: size)
        for py in 0..<h {
            for px in 0..<w {
                let c = colour(px, py, width: w, height: h)
                let (y, u, v) = ycbcr(c)
                let even = px % 2 == 0
                switch format {
                case .yuyv, .uyvy, .yvyu:
                    let pair = py * s + (px / 2) * 4
                    let (yo, uo, vo) = format == .yuyv ? (0, 1, 3) : format == .uyvy ? (1, 0, 2) : (0, 3, 1)
                    out[pair + yo + (even ? 0 : 2)] = y
                    if even { out[pair + uo] = u; out[pair + vo] = v }
                case .nv12, .nv16:
                    out[py * s + px] = y
                    if even && (format == .nv16 || py % 2 == 0) {
                        let i = s * h + (format == .nv12 ? py / 2 : py) * s + px
                        out[i] = u; out[i + 1] = v
                    }
                case .yu12:
                    out[py * s + px] = y
                    if even && py % 2 == 0 {
                        out[s * h + (py / 2) * cs + px / 2] = u
                        out[s * h + cs * ch + (py / 2) * cs + px / 2] = v
                    }
                case .grey:
                    out[py * s + px] = y
                case .rgb24, .bgr24:
                    let i = py * s + px * 3
                    let (a, b) = format == .rgb24 ? (c.r, c.b) : (c.b, c.r)
                    out[i] = UInt8(a); out[i + 1] = UInt8(c.g); out[i + 2] = UInt8(b)
                case .rgb565:
                    let v = (c.r >> 3) << 11 | (c.g >> 2) << 5 | c.b >> 3
                    out[py * s + px * 2] = UInt8(v & 0xFF); out[py * s + px * 2 + 1] = UInt8(v >> 8)
                case .mjpeg:
                    fatalError("not raw")
                }
            }
        }
        return (out, s)
    }

    /// Where output point (u, v) (normalised) comes from in the source: the inverse of
    /// "crop the centre by zoom, turn clockwise, then mirror", written independently of the
    /// encoder's tables.
    static func source(u: Double, v: Double, _ t: FrameTransform) -> (x: Double, y: Double) {
        let m = t.mirrored ? 1 - u : u
        let (x, y): (Double, Double)
        switch t.rotation {
        case 90: (x, y) = (v, 1 - m)
        case 180: (x, y) = (1 - m, 1 - v)
        case 270: (x, y) = (1 - v, m)
        default: (x, y) = (m, v)
        }
        // The crop: 1/zoom of each side, centred on `t.center` unless that would leave the
        // frame, where it stops at the edge.
        let side = 1 / t.zoom
        let x0 = min(max(t.center.x - side / 2, 0), 1 - side), y0 = min(max(t.center.y - side / 2, 0), 1 - side)
        return (x0 + x * side, y0 + y * side)
    }
}

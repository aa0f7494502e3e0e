// Drawing into a packed YUYV buffer: rectangles, ellipses and text. Pixels are addressed in
// pairs (one U/V per two pixels), so horizontal edges snap to even columns.

import CameraCore

/// A colour in full-range (JFIF) Y'CbCr, the space libturbojpeg encodes from.
public struct YUV: Sendable, Equatable {
    public var y: UInt8, u: UInt8, v: UInt8

    public init(y: UInt8, u: UInt8, v: UInt8) { self.y = y; self.u = u; self.v = v }

    public init(r: Int, g: Int, b: Int) {
        func clamp(_ x: Double) -> UInt8 { UInt8(max(0, min(255, x.rounded()))) }
        let (r, g, b) = (Double(r), Double(g), Double(b))
        y = clamp(0.299 * r + 0.587 * g + 0.114 * b)
        u = clamp(-0.168736 * r - 0.331264 * g + 0.5 * b + 128)
        v = clamp(0.5 * r - 0.418688 * g - 0.081312 * b + 128)
    }

    public static let white = YUV(r: 255, g: 255, b: 255)
    public static let black = YUV(r: 0, g: 0, b: 0)
}

/// Used only by the thread that owns the buffer (the capture thread); hence unchecked.
public struct YUYVCanvas: @unchecked Sendable {
    public let base: UnsafeMutablePointer<UInt8>
    public let width: Int
    public let height: Int
    public var stride: Int { width * 2 }

    public init(_ buffer: UnsafeMutableRawBufferPointer, width: Int, height: Int) {
        precondition(buffer.count >= width * height * 2)
        base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        self.width = width
        self.height = height
    }

    /// Fills columns [x0, x1) of one row; x0 and x1 are rounded to pixel pairs.
    @inline(__always)
    public func fillSpan(row: Int, from x0: Int, to x1: Int, _ c: YUV) {
        guard row >= 0, row < height else { return }
        let a = max(0, x0) & ~1, b = min(width, x1 + 1) & ~1
        guard a < b else { return }
        var p = base + row * stride + a * 2
        for _ in Swift.stride(from: a, to: b, by: 2) {
            p[0] = c.y; p[1] = c.u; p[2] = c.y; p[3] = c.v
            p += 4
        }
    }

    public func fill(x: Int, y: Int, width w: Int, height h: Int, _ c: YUV) {
        for row in max(0, y)..<min(height, y + h) { fillSpan(row: row, from: x, to: x + w, c) }
    }

    public func fillEllipse(cx: Double, cy: Double, rx: Double, ry: Double, _ c: YUV) {
        guard rx > 0, ry > 0 else { return }
        let top = Int((cy - ry).rounded(.down)), bottom = Int((cy + ry).rounded(.up))
        for row in max(0, top)...min(height - 1, max(0, bottom)) {
            let dy = (Double(row) + 0.5 - cy) / ry
            guard abs(dy) <= 1 else { continue }
            let half = rx * (1 - dy * dy).squareRoot()
            fillSpan(row: row, from: Int(cx - half), to: Int(cx + half), c)
        }
    }

    /// Draws text with each font pixel as a `scale`×`scale` block, on a backing box so it
    /// stays legible over any scene.
    public func drawText(_ text: String, x: Int, y: Int, scale: Int, _ c: YUV, background: YUV? = .black) {
        let advance = (BitmapFont.width + 1) * scale
        if let background {
            fill(x: x - scale, y: y - scale, width: advance * text.count + scale,
                 height: (BitmapFont.height + 2) * scale, background)
        }
        for (i, ch) in text.enumerated() {
            let rows = BitmapFont.glyph(ch), gx = x + i * advance
            for (r, bits) in rows.enumerated() where bits != 0 {
                for col in 0..<BitmapFont.width where bits & (0x10 >> col) != 0 {
                    fill(x: gx + col * scale, y: y + r * scale, width: scale, height: scale, c)
                }
            }
        }
    }

    /// The sum and count of the luma samples of `meanLuma`'s grid (every `step`th pixel of
    /// every `step`th row, from 0) that fall inside `rect`, in a whole frame `bytes` wide `width`.
    static func lumaGrid(_ bytes: UnsafeRawBufferPointer, width: Int, in rect: PixelRect, step: Int = 8) -> (sum: Int, count: Int) {
        func first(_ v: Int) -> Int { (v + step - 1) / step * step }
        var sum = 0, n = 0
        let p = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        for y in Swift.stride(from: first(rect.y0), to: rect.y1, by: step) {
            let row = p + y * width * 2
            for x in Swift.stride(from: first(rect.x0), to: rect.x1, by: step) { sum += Int(row[x * 2]); n += 1 }
        }
        return (sum, n)
    }

    /// Mean luma, sampled on a sparse grid (cheap enough for every frame).
    public func meanLuma(step: Int = 8) -> Double {
        var sum = 0, n = 0
        for y in Swift.stride(from: 0, to: height, by: step) {
            let row = base + y * stride
            for x in Swift.stride(from: 0, to: width, by: step) { sum += Int(row[x * 2]); n += 1 }
        }
        return n == 0 ? 0 : Double(sum) / Double(n)
    }

    /// Separable box blur of the luma channel (chroma is half resolution and left alone).
    /// `scratch` is reused between frames.
    public func blurLuma(radius r: Int, scratch: inout [UInt8], sums: inout [Int32]) {
        guard r > 0 else { return }
        if scratch.count != width * height { scratch = [UInt8](repeating: 0, count: width * height) }
        if sums.count != width { sums = [Int32](repeating: 0, count: width) }
        let w = width, h = height, st = stride
        scratch.withUnsafeMutableBufferPointer { tmp in
            // Horizontal: running sum along each row into the scratch plane.
            for y in 0..<h {
                let row = base + y * st, out = tmp.baseAddress! + y * w
                var acc = 0
                for x in -r...r { acc += Int(row[min(max(x, 0), w - 1) * 2]) }
                let n = 2 * r + 1
                for x in 0..<w {
                    out[x] = UInt8(acc / n)
                    acc += Int(row[min(x + r + 1, w - 1) * 2]) - Int(row[max(x - r, 0) * 2])
                }
            }
            // Vertical: running column sums, written back into the luma bytes.
            sums.withUnsafeMutableBufferPointer { col in
                for x in 0..<w { col[x] = 0 }
                for y in -r...r {
                    let src = tmp.baseAddress! + min(max(y, 0), h - 1) * w
                    for x in 0..<w { col[x] += Int32(src[x]) }
                }
                let n = Int32(2 * r + 1)
                for y in 0..<h {
                    let row = base + y * st
                    for x in 0..<w { row[x * 2] = UInt8(col[x] / n) }
                    let add = tmp.baseAddress! + min(y + r + 1, h - 1) * w
                    let sub = tmp.baseAddress! + max(y - r, 0) * w
                    for x in 0..<w { col[x] += Int32(add[x]) - Int32(sub[x]) }
                }
            }
        }
    }

    public static func textWidth(_ text: String, scale: Int) -> Int {
        text.count * (BitmapFont.width + 1) * scale
    }
}

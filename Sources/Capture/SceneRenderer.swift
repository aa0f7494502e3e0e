// One synthetic frame, drawn at the cost of what moves. The scene is a static background and
// a few moving things (the block, the face, the codes) inside a box that changes per frame;
// the lens (blur) and the exposure (tone) act on the whole picture. Most frames are in focus,
// and the tone is a per-byte table that changes only while exposure or balance settle, so the
// background is kept toned once per table and copied; only the box is drawn and toned. The
// result is byte for byte the whole-frame render (blur, if any, forces that path): a test
// renders both ways and compares.

import CameraCore
import Foundation

/// A rectangle of pixels [x0, x1) × [y0, y1), x0 and x1 on pixel pairs (one U/V per two).
struct PixelRect: Equatable, Sendable {
    var x0: Int, y0: Int, x1: Int, y1: Int

    static func full(_ width: Int, _ height: Int) -> PixelRect { PixelRect(x0: 0, y0: 0, x1: width, y1: height) }

    /// The rectangle grown to pixel pairs and clipped to a `width`×`height` frame.
    init(x0: Int, y0: Int, x1: Int, y1: Int, clippedTo width: Int, _ height: Int) {
        self.init(x0: max(0, x0) & ~1, y0: max(0, y0), x1: min(width, (x1 + 1) & ~1), y1: min(height, y1))
    }

    init(x0: Int, y0: Int, x1: Int, y1: Int) {
        self.x0 = x0; self.y0 = y0; self.x1 = x1; self.y1 = y1
    }

    var isEmpty: Bool { x0 >= x1 || y0 >= y1 }

    func union(_ o: PixelRect) -> PixelRect {
        if isEmpty { return o }
        if o.isEmpty { return self }
        return PixelRect(x0: min(x0, o.x0), y0: min(y0, o.y0), x1: max(x1, o.x1), y1: max(y1, o.y1))
    }
}

/// The exposure and white balance of one frame as a per-byte table: Y' = Y·gain + add,
/// U' = U + du, V' = V + dv, each rounded and clamped.
struct Tone: Equatable {
    /// 256 entries each for Y, U and V.
    let table: [UInt8]
    let isIdentity: Bool

    init(_ o: Optics) {
        isIdentity = o.gain == 1 && o.add == 0 && o.du == 0 && o.dv == 0
        func clamp(_ v: Double) -> UInt8 { UInt8(max(0, min(255, v.rounded()))) }
        var t = [UInt8](repeating: 0, count: 768)
        for i in 0..<256 {
            t[i] = clamp(Double(i) * o.gain + o.add)
            t[256 + i] = clamp(Double(i) + o.du)
            t[512 + i] = clamp(Double(i) + o.dv)
        }
        table = t
    }

    /// Maps `pairs` YUYV pixel pairs at `p` in place.
    func apply(_ p: UnsafeMutablePointer<UInt8>, pairs: Int) {
        guard !isIdentity else { return }
        table.withUnsafeBufferPointer { t in
            let ly = t.baseAddress!, lu = ly + 256, lv = ly + 512
            var p = p
            for _ in 0..<pairs {
                p[0] = ly[Int(p[0])]; p[1] = lu[Int(p[1])]; p[2] = ly[Int(p[2])]; p[3] = lv[Int(p[3])]
                p += 4
            }
        }
    }
}

/// Owns a synthetic camera's frame while it is drawn; used by its capture thread only (not
/// Sendable: it is reached only through its SyntheticFrameSource).
final class SceneRenderer {
    let scene: SyntheticScene
    let canvas: YUYVCanvas
    private var scratch: [UInt8] = [], sums: [Int32] = []
    /// The background through the last table used, and that table.
    private var toned: (tone: Tone, bytes: [UInt8])?
    /// The background's mean-luma grid sum (`YUYVCanvas.lumaGrid`), computed once.
    private let backgroundGrid: (sum: Int, count: Int)
    /// How many frames had to tone the whole background again (a new table): for the bench.
    private(set) var backgroundTonings = 0

    init(scene: SyntheticScene, canvas: YUYVCanvas) {
        self.scene = scene
        self.canvas = canvas
        backgroundGrid = scene.withBackground { bg in
            YUYVCanvas.lumaGrid(bg, width: scene.width, in: .full(scene.width, scene.height))
        }
    }

    /// Draws frame `sequence`: the moving things and `codes` over the background, then the
    /// lens and exposure `optics(sceneLuma)` decides from the scene's mean luma before them.
    /// `wholeFrame` draws and tones every pixel (the reference the fast path must equal).
    /// `walker`, when one is in view, is drawn after the codes (it walks in front of them).
    func render(sequence: UInt64, codes: [PlacedCode], walker: WalkerFigure? = nil, wholeFrame: Bool = false,
                optics: (_ sceneLuma: Double) -> Optics) {
        let w = scene.width, h = scene.height
        var box = scene.movingBounds(sequence: sequence)
        for c in codes { box = box.union(c.bounds(width: w, height: h)) }
        if let walker { box = box.union(walker.bounds(width: w, height: h)) }
        if wholeFrame { box = .full(w, h) }
        // 1. The box as the scene has it before the lens: background, moving things, codes.
        scene.withBackground { bg in copy(bg, box) }
        scene.drawMoving(into: canvas, sequence: sequence)
        for code in codes { code.draw(into: canvas) }
        walker?.draw(into: canvas)
        // 2. The mean luma of the whole scene: the background's, with the box's part replaced.
        let outside = scene.withBackground { bg in YUYVCanvas.lumaGrid(bg, width: w, in: box) }
        let inside = YUYVCanvas.lumaGrid(UnsafeRawBufferPointer(start: canvas.base, count: w * h * 2), width: w, in: box)
        let sum = backgroundGrid.sum - outside.sum + inside.sum
        let o = optics(backgroundGrid.count == 0 ? 0 : Double(sum) / Double(backgroundGrid.count))
        let tone = Tone(o)
        if o.blurRadius > 0 {
            // 3a. The lens blurs across the box's edges: the whole picture, untoned, then blur and tone.
            scene.withBackground { bg in copy(bg, box, outside: true) }
            canvas.blurLuma(radius: o.blurRadius, scratch: &scratch, sums: &sums)
            tone.apply(canvas.base, pairs: w * h / 2)
        } else {
            // 3b. In focus: the background toned once per table, the box toned here.
            if toned?.tone != tone {
                var bytes = scene.withBackground { Array($0) }
                bytes.withUnsafeMutableBufferPointer { tone.apply($0.baseAddress!, pairs: w * h / 2) }
                toned = (tone, bytes)
                backgroundTonings += 1
            }
            toned!.bytes.withUnsafeBytes { copy($0, box, outside: true) }
            for y in box.y0..<box.y1 { tone.apply(canvas.base + y * canvas.stride + box.x0 * 2, pairs: (box.x1 - box.x0) / 2) }
        }
    }

    /// Copies `src` (a whole frame) into the canvas inside `box`, or everywhere but `box`.
    private func copy(_ src: UnsafeRawBufferPointer, _ box: PixelRect, outside: Bool = false) {
        let st = canvas.stride, from = src.baseAddress!.assumingMemoryBound(to: UInt8.self), to = canvas.base
        func rows(_ y0: Int, _ y1: Int, _ x0: Int, _ x1: Int) {
            guard y0 < y1, x0 < x1 else { return }
            if x0 == 0 && x1 == scene.width {  // whole rows: one copy
                (to + y0 * st).update(from: from + y0 * st, count: (y1 - y0) * st)
                return
            }
            for y in y0..<y1 { (to + y * st + x0 * 2).update(from: from + y * st + x0 * 2, count: (x1 - x0) * 2) }
        }
        if !outside {
            rows(box.y0, box.y1, box.x0, box.x1)
        } else if box.isEmpty {
            rows(0, scene.height, 0, scene.width)
        } else {
            rows(0, box.y0, 0, scene.width)
            rows(box.y0, box.y1, 0, box.x0)
            rows(box.y0, box.y1, box.x1, scene.width)
            rows(box.y1, scene.height, 0, scene.width)
        }
    }
}

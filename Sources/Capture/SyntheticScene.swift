// The synthetic camera's two scenes. Rear is a pixel test (colour bars, a bouncing block);
// front is a person (a face whose head sways and whose eyes look around). Both carry the
// camera name, the frame counter and a clock so freshness is visible in every frame.
// The static part of each scene is drawn once per size and copied per frame.

import CameraCore
import Foundation

public enum SyntheticSceneKind: String, Sendable { case bars, person }

/// Touched only by its camera's capture thread once built, through its SyntheticFrameSource.
final class SyntheticScene {
    let kind: SyntheticSceneKind
    let label: String
    let width: Int, height: Int
    private var background: [UInt8]

    /// The classic bars, left to right: white, yellow, cyan, green, magenta, red, blue, black.
    static let bars: [YUV] = [
        YUV(r: 235, g: 235, b: 235), YUV(r: 235, g: 235, b: 16), YUV(r: 16, g: 235, b: 235),
        YUV(r: 16, g: 235, b: 16), YUV(r: 235, g: 16, b: 235), YUV(r: 235, g: 16, b: 16),
        YUV(r: 16, g: 16, b: 235), YUV(r: 16, g: 16, b: 16),
    ]
    static let wall = YUV(r: 120, g: 150, b: 190), floor = YUV(r: 110, g: 80, b: 50)
    static let skin = YUV(r: 224, g: 172, b: 140), hair = YUV(r: 60, g: 40, b: 25)
    static let shirt = YUV(r: 40, g: 60, b: 140)

    init(kind: SyntheticSceneKind, label: String, width: Int, height: Int) {
        self.kind = kind
        self.label = label
        self.width = width
        self.height = height
        background = [UInt8](repeating: 0, count: width * height * 2)
        background.withUnsafeMutableBytes { buf in
            let canvas = YUYVCanvas(buf, width: width, height: height)
            switch kind {
            case .bars: Self.drawBarsBackground(canvas)
            case .person: Self.drawPersonBackground(canvas)
            }
        }
    }

    /// The static part of every frame.
    func withBackground<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        background.withUnsafeBytes(body)
    }

    /// Draws what moves in frame `sequence` over what `canvas` holds (the background, at
    /// least inside `movingBounds`); the caption comes after the optics.
    func drawMoving(into canvas: YUYVCanvas, sequence: UInt64) {
        let t = Double(sequence) / 30.0  // motion follows frames, so it is deterministic
        switch kind {
        case .bars: let b = block(t: t); canvas.fill(x: b.x, y: b.y, width: b.size, height: b.size, .white)
        case .person: drawFace(canvas, face(t: t))
        }
    }

    /// Where frame `sequence` differs from the background: every pixel `drawMoving` writes.
    func movingBounds(sequence: UInt64) -> PixelRect {
        let t = Double(sequence) / 30.0
        switch kind {
        case .bars:
            let b = block(t: t)
            return PixelRect(x0: b.x, y0: b.y, x1: b.x + b.size, y1: b.y + b.size, clippedTo: width, height)
        case .person:
            let f = face(t: t)
            return f.ellipses.reduce(PixelRect(x0: 0, y0: 0, x1: 0, y1: 0)) { box, e in
                box.union(PixelRect(x0: Int((e.cx - e.rx).rounded(.down)) - 2, y0: Int((e.cy - e.ry).rounded(.down)) - 1,
                                    x1: Int((e.cx + e.rx).rounded(.up)) + 2, y1: Int((e.cy + e.ry).rounded(.up)) + 2,
                                    clippedTo: width, height))
            }.union(PixelRect(x0: f.mouth.x, y0: f.mouth.y, x1: f.mouth.x + f.mouth.width, y1: f.mouth.y + f.mouth.height,
                              clippedTo: width, height))
        }
    }

    // MARK: - Depth, for the simulated lens

    /// Distance of the scene's main subject, as a lens position (0 near … 1 far): the bars
    /// on the rear camera, the person on the front one.
    var subjectDepth: Double { kind == .bars ? 0.3 : 0.4 }

    /// The distance of whatever is at a normalized point: focusing there converges the
    /// lens to it, and blurs the main subject if it is somewhere else.
    static func depth(kind: SyntheticSceneKind, at p: Point) -> Double {
        switch kind {
        case .bars: return p.y < 2.0 / 3 ? 0.3 : 0.7  // bars near, floor band far
        case .person:
            let inHead = pow((p.x - 0.5) / 0.16, 2) + pow((p.y - 0.42) / 0.24, 2) <= 1
            let inBody = p.y > 0.66 && abs(p.x - 0.5) < 0.32
            return inHead || inBody ? 0.4 : 0.85      // the person near, the wall far
        }
    }

    // MARK: - Rear: bars

    private static func drawBarsBackground(_ c: YUYVCanvas) {
        let barsBottom = c.height * 2 / 3
        for (i, colour) in bars.enumerated() {
            let x0 = c.width * i / bars.count, x1 = c.width * (i + 1) / bars.count
            c.fill(x: x0, y: 0, width: x1 - x0, height: barsBottom, colour)
        }
        c.fill(x: 0, y: barsBottom, width: c.width, height: c.height - barsBottom, YUV(r: 40, g: 40, b: 40))
        // Tick marks every tenth of the width: a ruler for zoom and crop checks.
        for i in 0...10 {
            c.fill(x: c.width * i / 10 - 1, y: barsBottom, width: 2, height: max(2, c.height / 30), .white)
        }
    }

    /// The white block at time `t`: it crosses the floor band and back every four seconds.
    private func block(t: Double) -> (x: Int, y: Int, size: Int) {
        let band = height / 3, size = max(4, band / 3)
        let phase = t.truncatingRemainder(dividingBy: 4) / 2  // 0...2 over four seconds
        let travel = Double(width - size)
        return (Int(travel * (phase <= 1 ? phase : 2 - phase)), height - band + band / 3, size)
    }

    // MARK: - Front: a person

    private static func drawPersonBackground(_ c: YUYVCanvas) {
        let floorTop = c.height * 7 / 10
        c.fill(x: 0, y: 0, width: c.width, height: floorTop, wall)
        c.fill(x: 0, y: floorTop, width: c.width, height: c.height - floorTop, floor)
        let h = Double(c.height), w = Double(c.width)
        c.fillEllipse(cx: w / 2, cy: h * 1.02, rx: h * 0.42, ry: h * 0.36, shirt)
    }

    struct Ellipse { var cx, cy, rx, ry: Double; var colour: YUV }
    /// The face at time `t`, back to front: hair, skin, the eyes' whites and pupils; the mouth.
    private func face(t: Double) -> (ellipses: [Ellipse], mouth: (x: Int, y: Int, width: Int, height: Int)) {
        let h = Double(height), w = Double(width)
        let sway = sin(t * 2 * .pi / 5) * h * 0.04
        let cx = w / 2 + sway, cy = h * 0.42, ry = h * 0.22, rx = h * 0.17
        var e = [Ellipse(cx: cx, cy: cy - ry * 0.35, rx: rx * 1.08, ry: ry * 0.8, colour: Self.hair),
                 Ellipse(cx: cx, cy: cy + ry * 0.08, rx: rx, ry: ry * 0.92, colour: Self.skin)]
        let look = sin(t * 2 * .pi / 3) * rx * 0.08
        for side in [-1.0, 1.0] {
            let ex = cx + side * rx * 0.4, ey = cy - ry * 0.02
            e.append(Ellipse(cx: ex, cy: ey, rx: rx * 0.2, ry: ry * 0.1, colour: .white))
            e.append(Ellipse(cx: ex + look, cy: ey, rx: rx * 0.08, ry: ry * 0.08, colour: YUV(r: 40, g: 30, b: 20)))
        }
        return (e, (Int(cx - rx * 0.35), Int(cy + ry * 0.45), Int(rx * 0.7), max(2, Int(ry * 0.06))))
    }

    private func drawFace(_ c: YUYVCanvas, _ f: (ellipses: [Ellipse], mouth: (x: Int, y: Int, width: Int, height: Int))) {
        for e in f.ellipses { c.fillEllipse(cx: e.cx, cy: e.cy, rx: e.rx, ry: e.ry, e.colour) }
        c.fill(x: f.mouth.x, y: f.mouth.y, width: f.mouth.width, height: f.mouth.height, YUV(r: 150, g: 60, b: 60))
    }

    // MARK: - Caption

    /// The camera name, frame counter and clock: an overlay, so optics don't touch it.
    func drawCaption(_ c: YUYVCanvas, sequence: UInt64, timestamp: Double) {
        let scale = max(1, height / 160)
        let counter = String(sequence)
        let text = "\(label) #\(String(repeating: "0", count: max(0, 6 - counter.count)))\(counter) \(Self.clock(timestamp))"
        c.drawText(text, x: 2 * scale, y: height - (BitmapFont.height + 2) * scale, scale: scale, .white)
    }

    static func clock(_ t: Double) -> String {
        var seconds = time_t(t)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let ms = Int((t - t.rounded(.down)) * 1000)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(msText)"
    }
}

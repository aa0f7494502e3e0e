// What a test, a benchmark or a user stages in the synthetic scene so motion happens on cue
// (issue 28): the scene's own moving things can hold still, and a walker — a person-shaped
// figure — crosses the picture from the left edge to the right at a time given in advance.
// The walker is drawn before the simulated lens and sensor, like the codes: blur, exposure
// and noise apply to it as to everything else.

import CameraCore
import Foundation
import SystemSupport

/// A walker's crossing: it enters at the left edge at `startsAt` (Unix seconds) and has left
/// at the right edge `duration` seconds later; `size` is its height in frame heights.
public struct SceneWalker: Sendable, Equatable {
    public var startsAt: Double
    public var duration: Double
    public var size: Double

    public init(startsAt: Double, duration: Double, size: Double) {
        self.startsAt = startsAt
        self.duration = duration
        self.size = size
    }

    public var endsAt: Double { startsAt + duration }

    /// The figure's parts at time `t` in a `width`×`height` frame; nil while it is out of view.
    func figure(at t: Double, width: Int, height: Int) -> WalkerFigure? {
        guard t >= startsAt, t < endsAt else { return nil }
        let h = size * Double(height), w = h * WalkerFigure.aspect
        let progress = (t - startsAt) / duration
        let left = -w + (Double(width) + w) * progress  // the leading edge enters at 0, the trailing one leaves at 1
        return WalkerFigure(left: left, top: Double(height) * 0.95 - h, width: w, height: h,
                            stride: sin(progress * duration * 2 * .pi * 1.6))  // ~1.6 steps a second
    }
}

/// One pose of the walker, in pixels: head, body and two legs swinging.
struct WalkerFigure {
    /// Width over height: a person seen from the side, arms in.
    static let aspect = 0.32
    static let skin = YUV(r: 200, g: 150, b: 120), coat = YUV(r: 150, g: 30, b: 30), trousers = YUV(r: 30, g: 30, b: 40)
    var left, top, width, height: Double
    /// -1…1: how far the legs are apart, and which leads.
    var stride: Double

    func bounds(width w: Int, height h: Int) -> PixelRect {
        PixelRect(x0: Int(left.rounded(.down)) - 2, y0: Int(top.rounded(.down)) - 1,
                  x1: Int((left + width).rounded(.up)) + 2, y1: Int((top + height).rounded(.up)) + 1, clippedTo: w, h)
    }

    func draw(into c: YUYVCanvas) {
        let cx = left + width / 2, head = height * 0.13
        c.fillEllipse(cx: cx, cy: top + head / 2, rx: head * 0.42, ry: head / 2, Self.skin)
        let bodyTop = top + head, bodyHeight = height * 0.42
        c.fill(x: Int(cx - width * 0.3), y: Int(bodyTop), width: Int(width * 0.6), height: Int(bodyHeight), Self.coat)
        let legTop = bodyTop + bodyHeight, legHeight = top + height - legTop, legWidth = width * 0.2
        for side in [-1.0, 1.0] {
            // Each leg a slanted column of spans: its foot swings forward or back.
            let swing = side * stride * width * 0.35
            for row in 0..<max(1, Int(legHeight)) {
                let f = Double(row) / max(1, legHeight)
                let x = cx - legWidth / 2 + swing * f
                c.fillSpan(row: Int(legTop) + row, from: Int(x), to: Int(x + legWidth), Self.trousers)
            }
        }
    }
}

/// The staging a synthetic camera's capture thread reads each frame: whether the scene's own
/// things move, and the walker. Set from the HTTP side, read on the capture thread.
public final class SceneStaging: Sendable {
    private struct State {
        var moving = true
        var walker: SceneWalker?
    }
    private let state = Locked(State())

    public init() {}

    /// Whether the rear camera's block and the front camera's head move (default) or hold still.
    public var moving: Bool {
        get { state.withLock { $0.moving } }
        set { state.withLock { $0.moving = newValue } }
    }

    /// The walker crossing now or later; nil once it has left (or when none was staged).
    public var walker: SceneWalker? {
        get { state.withLock { s in s.walker.flatMap { $0.endsAt > Clock.now() ? $0 : nil } } }
        set { state.withLock { $0.walker = newValue } }
    }

    /// What the capture thread draws (walker included after it left): one lock a frame.
    public func current() -> (moving: Bool, walker: SceneWalker?) { state.withLock { ($0.moving, $0.walker) } }
}

// The motion detector of one camera (issue 28), as Motion does it: the frame's luma reduced
// to a grid of about 160 cells across, each compared with a slowly updated reference. A cell
// changes when it differs by more than its own learned noise allows (the sensor's grain at
// ISO 3200 is not motion), after the picture's overall brightness change is divided out (a
// light, the torch, auto-exposure settling are not motion); a lone changed cell is a speck,
// and a cell that changes most of the time (a clock's digits, a flag) is left out while it
// does. The frame's score is the percentage of the unmasked picture that changed.
//
// One owner: the camera's capture thread (the motion output's `take`). The C kernel does the
// per-cell work (CMotion); this keeps its memory and the bookkeeping around it.

import CMotion

public final class MotionDetector {
    /// One frame's verdict.
    public struct Observation: Sendable, Equatable {
        /// Percent of the cells in the mask (and not busy) that changed.
        public var score: Double
        /// The changed cells' bounds, in grid cells; nil when none changed.
        public var box: GridRect?
        /// Still learning the scene (the first frames, and after a change of light): nothing is judged.
        public var learning: Bool
        /// Most of the picture changed at once: a light switched, not motion; the scene is learned anew.
        public var lightSwitch: Bool
        /// The change of light divided out: the picture ≈ gain · reference + offset.
        public var gain: Double = 1, offset: Double = 0
        /// Percent of the mask changed before specks and busy cells were left out.
        public var rawPercent: Double = 0
    }

    public struct GridRect: Sendable, Equatable {
        public var x0: Int, y0: Int, x1: Int, y1: Int
    }

    /// Frames spent learning the scene after a start or a change of light.
    public static let learningFrames = 30
    /// Changed cells, in percent of the mask, that make a frame a change of light.
    public static let lightSwitchPercent = 50.0

    public let gridWidth: Int, gridHeight: Int
    public var cells: Int { gridWidth * gridHeight }
    private var params: vf_motion_params
    private var ref: [Float], noise: [Float], activity: [Float], busy: [UInt8]
    private var grid: [UInt8], changed: [UInt8], scratch: [UInt8]
    private var allCells: [UInt8]
    private var learning = learningFrames
    private var started = false

    /// A detector for `width`×`height` frames at `fps` (the rates of its memory are per frame).
    public init(width: Int, height: Int, fps: Int) {
        let cell = max(2, Int((Double(width) / 160).rounded()))
        gridWidth = max(1, width / cell)
        gridHeight = max(1, height / cell)
        let n = gridWidth * gridHeight, perSecond = Float(max(1, fps))
        params = vf_motion_params(
            cells: Int32(n), gw: Int32(gridWidth), gh: Int32(gridHeight),
            min_diff: 10, noise_factor: 5,
            ref_rate: 3 / perSecond,          // the background follows in about a third of a second…
            ref_rate_changed: 0.2 / perSecond,  // …and what stopped moving joins it in about five
            noise_rate: 1 / perSecond,
            activity_rate: 0.5 / perSecond, busy_on: 0.3, busy_off: 0.1, light_tolerance: 8)
        ref = [Float](repeating: 0, count: n)
        noise = [Float](repeating: 2, count: n)
        activity = [Float](repeating: 0, count: n)
        busy = [UInt8](repeating: 0, count: n)
        grid = [UInt8](repeating: 0, count: n)
        changed = [UInt8](repeating: 0, count: n)
        scratch = [UInt8](repeating: 0, count: n)
        allCells = [UInt8](repeating: 1, count: n)
    }

    /// Cells left out because they change most of the time.
    public var busyCells: Int { busy.reduce(0) { $0 + Int($1) } }

    /// Judges one frame's luma: sample (x, y) at `plane[y * stride + x * xstep]`, the plane
    /// `width`×`height` (the frame's, or smaller: a decoded JPEG's scaled luma). `mask`: one
    /// byte a cell, 1 where motion counts (nil: everywhere).
    public func observe(_ plane: UnsafeRawBufferPointer, stride: Int, xstep: Int, width: Int, height: Int,
                        mask: [UInt8]?) -> Observation {
        guard width >= gridWidth, height >= gridHeight, plane.count >= stride * (height - 1) + width * xstep - (xstep - 1) else {
            return Observation(score: 0, box: nil, learning: true, lightSwitch: false)
        }
        grid.withUnsafeMutableBufferPointer { g in
            vf_motion_grid(plane.baseAddress!.assumingMemoryBound(to: UInt8.self), stride, Int32(xstep), Int32(width),
                           Int32(height), Int32(gridWidth), Int32(gridHeight), g.baseAddress!)
        }
        if !started {
            started = true
            rebase()
        }
        let learn = learning > 0
        var r = vf_motion_result()
        let m = mask.flatMap { $0.count == cells ? $0 : nil } ?? allCells
        m.withUnsafeBufferPointer { mask in
            ref.withUnsafeMutableBufferPointer { ref in
                noise.withUnsafeMutableBufferPointer { noise in
                    activity.withUnsafeMutableBufferPointer { activity in
                        busy.withUnsafeMutableBufferPointer { busy in
                            var s = vf_motion_state(ref: ref.baseAddress, noise: noise.baseAddress,
                                                    activity: activity.baseAddress, busy: busy.baseAddress)
                            vf_motion_step(&params, &s, grid, mask.baseAddress, learn ? 1 : 0, &changed, &scratch, &r)
                        }
                    }
                }
            }
        }
        if learn {
            learning -= 1
            return Observation(score: 0, box: nil, learning: true, lightSwitch: false)
        }
        if r.light_changed != 0 {
            return Observation(score: 0, box: nil, learning: false, lightSwitch: true, gain: Double(r.gain), offset: Double(r.offset))
        }
        if r.in_mask > 0, Double(r.raw_changed) * 100 / Double(r.in_mask) > Self.lightSwitchPercent {
            rebase()
            learning = Self.learningFrames / 3
            return Observation(score: 0, box: nil, learning: false, lightSwitch: true)
        }
        let score = r.considered > 0 ? Double(r.changed) * 100 / Double(r.considered) : 0
        let box = r.changed > 0 ? GridRect(x0: Int(r.x0), y0: Int(r.y0), x1: Int(r.x1), y1: Int(r.y1)) : nil
        return Observation(score: score, box: box, learning: false, lightSwitch: false, gain: Double(r.gain), offset: Double(r.offset),
                           rawPercent: r.in_mask > 0 ? Double(r.raw_changed) * 100 / Double(r.in_mask) : 0)
    }

    /// Learns the scene again from the next frame (a new format, a change of light).
    public func relearn() { learning = Self.learningFrames; started = false }

    private func rebase() {
        ref.withUnsafeMutableBufferPointer { ref in
            var s = vf_motion_state(ref: ref.baseAddress, noise: nil, activity: nil, busy: nil)
            vf_motion_rebase(&s, grid, Int32(cells))
        }
    }
}

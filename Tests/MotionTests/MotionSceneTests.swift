// The detector on the synthetic camera's frames, made as fast as they can be drawn (a minute
// of frames in seconds): still scenes at three ISOs, a walker, masks, changes of light. The
// frames are the camera's own (scene, lens, exposure, sensor noise, caption), so what fools
// the detector here would fool it on the running camera.

import CameraCore
import Capture
import CaptureTestSupport
import Motion
import Foundation
import Testing

let debugMotion = ProcessInfo.processInfo.environment["DEBUG_MOTION"] != nil

/// Under a sanitizer (TestTime.scale > 1) these suites do not run: they are single-threaded
/// arithmetic on frames drawn in software, thirty times slower instrumented, and their threads
/// starved the suites beside them (servers that answered nothing for 30 s). The detector runs
/// under the sanitizers in MotionAPITests, on live cameras, beside everything else.
let sanitized = TestTime.scale > 1

struct MotionRun {
    var events: [MotionEventTimes] = []
    var started: [Double] = []
    var maxScore = 0.0
}

/// Runs `seconds` of `camera`'s frames at 30 fps through a detector with `settings`,
/// `t0` being the first frame's time; `step(t)` changes the scene or the camera before a frame.
/// Seconds of arithmetic: on a thread of its own, not one of the cooperative pool's two.
func detect(_ camera: SyntheticCamera, seconds: Double, t0: Double, width: Int = 640, height: Int = 480,
            settings: MotionSettings = MotionSettings(enabled: true), transform: FrameTransform = .identity,
            step: @escaping (Double) -> Void = { _ in }, observe: @escaping (Double) -> Void = { _ in }) async -> MotionRun {
    try! await offload {
        // One run at a time, whichever suite asks: the five runs are seconds of arithmetic each,
        // and together they took both cores from the suites beside them (wall-clock waits failed).
        detectTurn.wait()
        defer { detectTurn.signal() }
        return detectOnThisThread(camera, seconds: seconds, t0: t0, width: width, height: height, settings: settings,
                           transform: transform, step: step, observe: observe)
    }
}

private let detectTurn = DispatchSemaphore(value: 1)

private func detectOnThisThread(_ camera: SyntheticCamera, seconds: Double, t0: Double, width: Int, height: Int,
                                settings: MotionSettings, transform: FrameTransform,
                                step: (Double) -> Void, observe: (Double) -> Void) -> MotionRun {
    let fps = 30
    let source = camera.frameSource(format: VideoFormat(pixelFormat: .yuyv, width: width, height: height, fps: fps))
    let detector = MotionDetector(width: width, height: height, fps: fps)
    let mask = MotionMask.cells(settings.masks, gridWidth: detector.gridWidth, gridHeight: detector.gridHeight, transform: transform)
    var tracker = MotionTracker()
    var run = MotionRun()
    for i in 0..<Int(seconds * Double(fps)) {
        let t = t0 + Double(i) / Double(fps)
        step(t)
        source.frame(sequence: UInt64(i), timestamp: t) { frame in
            if i % 30 == 0 { observe(meanLuma(frame)) }
            let o = detector.observe(frame.bytes, stride: frame.stride, xstep: 2, width: width, height: height, mask: mask)
            run.maxScore = max(run.maxScore, o.score)
            if debugMotion, o.score > 0.3 || o.lightSwitch {
                print(String(format: "t=%.3f score=%.2f raw=%.1f gain=%.3f off=%.1f ls=%d", t - t0, o.score, o.rawPercent, o.gain, o.offset, o.lightSwitch ? 1 : 0))
            }
            switch tracker.update(time: t, moving: o.score >= settings.threshold, score: o.score) {
            case .started(let at): run.started.append(at)
            case .ended(let e): run.events.append(e)
            case nil: break
            }
        }
    }
    if case .ended(let e) = tracker.reset() { run.events.append(e) }
    return run
}

/// The frame's mean luma, every 8th pixel of every 8th row.
func meanLuma(_ frame: borrowing RawFrame) -> Double {
    var sum = 0, n = 0
    for y in stride(from: 0, to: frame.format.height, by: 8) {
        for x in stride(from: 0, to: frame.format.width, by: 8) { sum += Int(frame.bytes[y * frame.stride + 2 * x]); n += 1 }
    }
    return Double(sum) / Double(max(1, n))
}

func exposure(_ camera: SyntheticCamera, iso: Double? = nil, bias: Double = 0, torch: Bool = false) {
    var s = DeviceSettings(for: camera.capabilities)
    if let iso {
        s.exposure.mode = .custom
        s.exposure.iso = iso
        s.exposure.duration = 1.0 / 60 * 100 / iso  // the picture as bright at every ISO: only the grain grows
    }
    s.exposure.bias = bias
    s.torch.mode = torch ? .on : .off
    s.torch.level = torch ? 1 : 0
    _ = try? camera.apply(SettingsChange(old: nil, new: s))
}

@Suite(.disabled(if: sanitized, "frame-drawing arithmetic; MotionAPITests runs the detector under the sanitizers"))
struct MotionSceneTests {
    @Test(arguments: [100.0, 800.0, 3200.0])
    func aStillSceneHasNoEvent(iso: Double) async {
        let camera = SyntheticCamera(id: "rear", position: .rear)
        camera.staging.moving = false
        exposure(camera, iso: iso)
        var brightness = 0.0
        let run = await detect(camera, seconds: 60, t0: 1_000_000, observe: { brightness = $0 })
        #expect(run.started.isEmpty, "ISO \(iso): \(run.started.count) events, score up to \(run.maxScore)")
        #expect(brightness > 60 && brightness < 190, "the picture is exposed, not black or white: mean luma \(brightness)")
    }
}

@Suite(.disabled(if: sanitized, "frame-drawing arithmetic; MotionAPITests runs the detector under the sanitizers"))
struct MotionWalkerTests {
    /// Ten walkers, one every 8 s: each an event that starts within 0.5 s of it entering.
    @Test func everyWalkerIsAnEventWithinHalfASecond() async {
        let camera = SyntheticCamera(id: "rear", position: .rear)
        camera.staging.moving = false
        let t0 = 1_000_000.0
        let walkers = 10
        let entries = (0..<walkers).map { t0 + 3 + Double($0) * 8 }
        let run = await detect(camera, seconds: Double(walkers) * 8 + 4, t0: t0) { t in
            if let next = entries.last(where: { $0 <= t + 0.5 }), camera.staging.current().walker?.startsAt != next {
                camera.staging.walker = SceneWalker(startsAt: next, duration: 3, size: 0.5)
            }
        }
        #expect(run.events.count == walkers, "events at \(run.started.map { $0 - t0 })")
        for (entry, start) in zip(entries, run.started) {
            let delay: Double = start - entry
            #expect(delay >= 0 && delay <= 0.5, "walker at \(entry - t0): event at \(start - t0)")
        }
        // The event lasts about as long as the walker is in view.
        for (entry, e) in zip(entries, run.events) {
            #expect(e.end - entry > 2.5 && e.end - entry <= 3.2, "walker at \(entry - t0) ends \(e.end - t0)")
        }
    }

    /// The person scene (its head still) at ISO 3200: the walker still stands out of the grain.
    @Test func aWalkerIsSeenThroughTheGrainOfISO3200() async {
        let camera = SyntheticCamera(id: "front", position: .front)
        camera.staging.moving = false
        exposure(camera, iso: 3200)
        let t0 = 1_000_000.0
        camera.staging.walker = SceneWalker(startsAt: t0 + 3, duration: 4, size: 0.5)
        let run = await detect(camera, seconds: 9, t0: t0)
        #expect(run.events.count == 1)
        if let start = run.started.first { #expect(start - (t0 + 3) <= 0.5) }
    }

    @Test func aMaskOverTheWalkersPathKeepsItFromCounting() async {
        let camera = SyntheticCamera(id: "rear", position: .rear)
        camera.staging.moving = false
        let t0 = 1_000_000.0
        camera.staging.walker = SceneWalker(startsAt: t0 + 3, duration: 3, size: 0.5)
        // The bottom 60 % of the picture, where the walker (feet at 95 %, half the height tall) walks.
        let road: MotionPolygon = [.init(x: 0, y: 0.4), .init(x: 1, y: 0.4), .init(x: 1, y: 1), .init(x: 0, y: 1)]
        let masked = await detect(camera, seconds: 8, t0: t0, settings: MotionSettings(enabled: true, masks: [road]))
        #expect(masked.started.isEmpty, "score up to \(masked.maxScore)")
        // Upside down, the same mask covers the top: the walker (now in the top half) counts again.
        camera.staging.walker = SceneWalker(startsAt: t0 + 103, duration: 3, size: 0.5)
        let turned = await detect(camera, seconds: 8, t0: t0 + 100, settings: MotionSettings(enabled: true, masks: [road]),
                            transform: FrameTransform(rotation: 180))
        #expect(turned.started.count == 1)
    }

    @Test func changesOfLightAreNotMotion() async {
        let camera = SyntheticCamera(id: "rear", position: .rear)
        camera.staging.moving = false
        let t0 = 1_000_000.0
        // Every 2.5 s: torch on, off, exposure bias +1.5, −1.5, 0 (the auto exposure settles after each).
        let steps: [(Bool, Double)] = [(true, 0), (false, 0), (false, 1.5), (false, -1.5), (false, 0), (true, 1), (false, 0)]
        var last = -1
        let run = await detect(camera, seconds: 20, t0: t0) { t in
            let i = Int((t - t0) / 2.5) - 1
            if i >= 0, i < steps.count, i != last {
                last = i
                exposure(camera, bias: steps[i].1, torch: steps[i].0)
            }
        }
        #expect(run.started.isEmpty, "events at \(run.started.map { $0 - t0 }), score up to \(run.maxScore)")
    }
}

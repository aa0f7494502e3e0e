// The motion output (issue 28): one more output on the frame path, reading the luma the frame
// already has. Its `take` runs the detector on the capture thread itself — the frame reduced
// to a grid of cell means and compared, about a hundred microseconds at 720p (/metrics counts
// its CPU) — so nothing is copied and no thread waits. Events go to the session; the frame of
// an event's highest score is encoded (on the output's snapshot lane of the shared pool) for the movie.
// Kept across runs, with its settings and figures; the snapshot lane is the run's.

import CameraCore
import Foundation
import JPEG
import Motion
import SystemSupport

final class MotionOutput: CaptureOutput {
    /// Frames judged a second, at most (a 60 fps camera is judged every other frame).
    static let maxRate = 30.0
    /// Seconds between `moving` events while an event is under way: where it moves, for an
    /// outline that follows it, without an event a frame.
    static let movingInterval = 0.25

    struct Snapshot: Sendable {
        var jpeg: [UInt8]
        var at: Double
        var score: Double
    }

    private struct Shared {
        var settings: MotionSettings
        var camera: String
        /// Bumped by every configure: the mask is made again.
        var generation = 0
        var nextDue = 0.0
        var tracker = MotionTracker()
        var score = 0.0
        var box: NormalizedRect?
        /// The best frame since the session last took one (the event's, or merged events').
        var snapshot: Snapshot?
        /// The score the snapshot lane was last given, and when.
        var snapshotAsked = (score: 0.0, at: 0.0)
        /// When the last `started` or `moving` event was sent.
        var lastTold = 0.0
        /// Frames judged this run, and the detector's milliseconds a frame (a moving average).
        var judged: UInt64 = 0
        var msPerFrame = 0.0
    }

    /// What the capture thread alone touches: the detector and the mask it uses.
    private final class Work: @unchecked Sendable {
        var detector: MotionDetector?
        var format: VideoFormat?
        var mask: [UInt8]?
        var maskFor: (generation: Int, transform: FrameTransform)?
        var luma: LumaDecoder?
    }

    private let shared: Locked<Shared>
    /// The detector's figures since the output was added (for /metrics).
    let figures = Locked(MotionFigures())
    private let work = Work()
    private let onEvent = Locked<@Sendable (MotionEvent) -> Void>({ _ in })
    private let snapshots: FrameLane<SnapshotJob>

    struct SnapshotJob: Sendable {
        var transform: FrameTransform
        var at: Double
        var score: Double
    }

    init(settings: MotionSettings, pool: EncodePool) {
        let shared = Locked(Shared(settings: settings, camera: ""))
        self.shared = shared
        snapshots = FrameLane { run in FrameHandoff(name: "\(run.camera)-motion-snapshot", policy: .newestWins, pool: pool) {
            let encoder = FrameEncoder()
            return { frame, job in
                guard let image = try? encoder.encode(frame, quality: 85, transform: job.transform) else { return }
                let snapshot = Snapshot(jpeg: image.jpeg, at: job.at, score: job.score)
                shared.withLock { s in
                    if (s.snapshot?.score ?? -1) < job.score { s.snapshot = snapshot }
                }
            }
        } }
    }

    /// Where events go: called on the capture thread (or the caller of `configure`/`runEnded`).
    func setEventHandler(_ handler: @escaping @Sendable (MotionEvent) -> Void) { onEvent.withLock { $0 = handler } }

    var settings: MotionSettings { shared.withLock { $0.settings } }

    var state: MotionState {
        shared.withLock { s in
            var m = MotionState.off(s.settings)
            guard s.settings.enabled else { return m }
            m.active = s.tracker.current != nil
            m.since = s.tracker.current?.start
            m.score = s.score
            m.box = s.box
            return m
        }
    }

    /// Its work is on the capture thread (no hand-off): frames judged, the detector's time.
    var kind: OutputKind { .motion }

    var report: OutputReport {
        shared.withLock { s in
            OutputReport(type: .motion, active: s.settings.enabled, framesIn: s.judged,
                         msPerFrame: (s.msPerFrame * 100).rounded() / 100)
        }
    }

    /// The best frame of the events since the last call, and forgets it.
    func takeSnapshot() -> Snapshot? { shared.withLock { s in defer { s.snapshot = nil }; return s.snapshot } }

    /// New settings from the next frame on; turning detection off ends an event under way.
    func configure(_ settings: MotionSettings) {
        let ended = shared.withLock { s -> MotionEvent? in
            s.settings = settings
            s.generation += 1
            guard !settings.enabled else { return nil }
            s.score = 0
            s.box = nil
            return Self.endEvent(&s)
        }
        if let ended { announceEnd(ended) }
    }

    // MARK: - The capture thread's side

    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool {
        shared.withLock { $0.settings.enabled && now >= $0.nextDue - 0.25 / Self.maxRate }
    }

    func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        let (settings, generation) = shared.withLock { s -> (MotionSettings, Int) in
            s.nextDue = max(s.nextDue + 1 / Self.maxRate, context.now + 0.5 / Self.maxRate)  // after a stall: no burst
            return (s.settings, s.generation)
        }
        let cpu = Self.threadCPU()
        guard let observation = observe(frame, settings: settings, generation: generation, transform: context.transform),
              let detector = work.detector else { return }
        let t = frame.timestamp
        let judged = !observation.learning && !observation.lightSwitch
        let moving = judged && observation.score >= settings.threshold
        // What moved, when it counts: a frame that moves (a clock's digits changing below the
        // threshold, or the quiet second that ends an event, are not outlined).
        let box = moving ? observation.box.map { Self.viewRect($0, detector, context.transform) } : nil
        let spent = Self.threadCPU() - cpu
        let (event, snapshotDue) = shared.withLock { s -> (MotionEvent?, Bool) in
            guard s.settings.enabled, s.generation == generation else { return (nil, false) }
            s.judged += 1
            s.msPerFrame = s.judged == 1 ? spent * 1000 : s.msPerFrame * 0.9 + spent * 100
            s.score = observation.score
            s.box = box
            var event: MotionEvent?
            switch s.tracker.update(time: t, moving: moving, score: observation.score) {
            case .started(let at):
                s.snapshotAsked = (0, 0)
                s.lastTold = t
                event = MotionEvent(camera: s.camera, event: .started, at: at, start: at, end: nil, peak: nil,
                                    score: observation.score, box: box)
            case .ended(let e):
                event = Self.ended(e, &s)
            case nil:
                if moving, let current = s.tracker.current, t - s.lastTold >= Self.movingInterval {
                    s.lastTold = t
                    event = MotionEvent(camera: s.camera, event: .moving, at: t, start: current.start, end: nil, peak: nil,
                                        score: observation.score, box: box)
                }
            }
            // The frame of a new peak (a tenth higher than the last one asked for, at most
            // four a second) is encoded for the event's snapshot.
            let due = s.tracker.current != nil && observation.score > s.snapshotAsked.score * 1.1 && t - s.snapshotAsked.at >= 0.25
            if due { s.snapshotAsked = (observation.score, t) }
            return (event, due)
        }
        figures.withLock { f in
            f.cpuSeconds += spent
            f.count(score: observation.score)
            if event?.event == .started { f.events += 1 }
            if let e = event, e.event == .ended, let end = e.end { f.secondsInMotion += end - e.start }
        }
        if snapshotDue { snapshots.submit(frame, SnapshotJob(transform: context.transform, at: t, score: observation.score)) }
        if let event { onEvent.withLock { $0 }(event) }
    }

    func runStarted(_ run: CaptureRun) {
        shared.withLock { $0.camera = run.camera }
        snapshots.start(run)
    }

    /// The camera stopped: an event under way ends at its last moving frame.
    func runEnded() {
        snapshots.end()
        if let ended = shared.withLock({ s -> MotionEvent? in s.score = 0; s.box = nil; return Self.endEvent(&s) }) { announceEnd(ended) }
    }

    /// An event ended off the frame path (detection turned off, the camera stopped).
    private func announceEnd(_ e: MotionEvent) {
        figures.withLock { $0.secondsInMotion += (e.end ?? e.start) - e.start }
        onEvent.withLock { $0 }(e)
    }

    private static func endEvent(_ s: inout Shared) -> MotionEvent? {
        guard case .ended(let e) = s.tracker.reset() else { return nil }
        return ended(e, &s)
    }

    private static func ended(_ e: MotionEventTimes, _ s: inout Shared) -> MotionEvent {
        return MotionEvent(camera: s.camera, event: .ended, at: e.end, start: e.start, end: e.end,
                           peak: .init(at: e.peak, score: (s.tracker.peakScore * 100).rounded() / 100), score: s.score, box: s.box)
    }

    /// Runs the detector on the frame's luma (a JPEG's decoded small); nil when the frame has none to read.
    private func observe(_ frame: borrowing RawFrame, settings: MotionSettings, generation: Int,
                         transform: FrameTransform) -> MotionDetector.Observation? {
        let f = frame.format
        if work.format != f || work.detector == nil {
            work.detector = MotionDetector(width: f.width, height: f.height, fps: min(f.fps, Int(Self.maxRate)))
            work.format = f
            work.maskFor = nil
        }
        let detector = work.detector!
        if work.maskFor?.generation != generation || work.maskFor?.transform != transform {
            work.mask = MotionMask.cells(settings.masks, gridWidth: detector.gridWidth, gridHeight: detector.gridHeight, transform: transform)
            work.maskFor = (generation, transform)
        }
        let mask = work.mask
        let bytes = frame.bytes, stride = frame.stride
        switch f.pixelFormat {
        case .yuyv, .yvyu:
            return detector.observe(bytes, stride: stride, xstep: 2, width: f.width, height: f.height, mask: mask)
        case .uyvy:
            return detector.observe(UnsafeRawBufferPointer(rebasing: bytes.dropFirst()), stride: stride, xstep: 2,
                                    width: f.width, height: f.height, mask: mask)
        case .nv12, .nv16, .yu12, .grey:
            return detector.observe(bytes, stride: stride, xstep: 1, width: f.width, height: f.height, mask: mask)
        case .mjpeg:
            if work.luma == nil { work.luma = try? LumaDecoder() }
            return try? work.luma?.decode(bytes, maxWidth: detector.gridWidth * 2) { plane, w, h in
                detector.observe(plane, stride: w, xstep: 1, width: w, height: h, mask: mask)
            }
        case .rgb24, .bgr24, .rgb565:
            guard let (plane, w, h) = MetadataOutput.lumaPlane(bytes, f, stride: stride) else { return nil }
            return plane.withUnsafeBytes { detector.observe($0, stride: w, xstep: 1, width: w, height: h, mask: mask) }
        }
    }

    /// A box of grid cells as a rectangle of the picture viewers see.
    private static func viewRect(_ r: MotionDetector.GridRect, _ d: MotionDetector, _ t: FrameTransform) -> NormalizedRect {
        let corners = [(r.x0, r.y0), (r.x1, r.y0), (r.x0, r.y1), (r.x1, r.y1)].map {
            t.viewPoint(x: Double($0.0) / Double(d.gridWidth), y: Double($0.1) / Double(d.gridHeight))
        }
        func clamp(_ v: Double) -> Double { (min(1, max(0, v)) * 10000).rounded() / 10000 }
        let x0 = clamp(corners.map(\.x).min()!), x1 = clamp(corners.map(\.x).max()!)
        let y0 = clamp(corners.map(\.y).min()!), y1 = clamp(corners.map(\.y).max()!)
        return NormalizedRect(x: x0, y: y0, width: clamp(x1 - x0), height: clamp(y1 - y0))
    }

    /// CPU seconds this thread has used.
    private static func threadCPU() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

// Capture → outputs, for one run of a camera: the connections of the graph made live. The
// capture thread offers each frame to the run's outputs (CaptureOutput: preview, photos,
// metadata, live, motion, the ring, the movie), in the graph's order; each says whether it
// wants the frame and takes it into its own hand-off. The pipeline knows none of them by
// name. What the frame's outputs share — its session sequence and transform (what remains of
// it after a camera's own crop, DeviceCrop.swift) — is worked out once, only when one of them
// takes it. The capture thread never waits for an output, and no lock is held while an
// output takes a frame.
//
// The outputs outlive the pipeline (the graph keeps them); a pipeline is made for each run,
// takes frames only between `begin` (the outputs are told the run started) and `deactivate`
// (they are told it ended). A new run (a format change, a reopening) begins only once the old
// run's pipeline was deactivated and its capture thread joined: no output sees two runs at once.

import SystemSupport

public final class FramePipeline: Sendable {
    public let run: CaptureRun
    /// Fixed for the run: the capture thread reads them without a lock.
    public let outputs: [any CaptureOutput]
    /// Zoom (its digital part), rotation and mirror now: the session's, read per frame.
    private let transform: @Sendable () -> FrameTransform
    private let nextSequence: @Sendable () -> UInt64
    private enum Phase { case waiting, taking, ended }
    private struct Intake {
        var phase = Phase.waiting
        var firstFrame: (@Sendable () -> Void)?
    }
    /// Read once a frame.
    private let intake: Locked<Intake>

    /// `firstFrame` is told once, on the capture thread: a camera reopened after a loss is back
    /// only once it delivers. `nextSequence` numbers the frames some output takes.
    public init(run: CaptureRun, outputs: [any CaptureOutput], transform: @escaping @Sendable () -> FrameTransform,
                nextSequence: @escaping @Sendable () -> UInt64, firstFrame: (@Sendable () -> Void)? = nil) {
        self.run = run
        self.outputs = outputs
        self.transform = transform
        self.nextSequence = nextSequence
        intake = Locked(Intake(firstFrame: firstFrame))
    }

    /// The run's outputs are told it started, then take frames. Frames before this are not
    /// offered. Once only; not after `deactivate`.
    public func begin() {
        guard intake.withLock({ $0.phase == .waiting }) else { return }
        for o in outputs { o.runStarted(run) }
        intake.withLock { i in if i.phase == .waiting { i.phase = .taking } }
    }

    /// After this returns no new frame from this pipeline is taken, and every output of a run
    /// that began was told it ended (each finishes or drops what it holds: waiting photos
    /// answer at once). Idempotent.
    public func deactivate() {
        let began = intake.withLock { i -> Bool in
            defer { i.phase = .ended }
            return i.phase == .taking
        }
        if began { for o in outputs { o.runEnded() } }
    }

    /// On the capture thread, for every frame.
    public func handle(_ frame: borrowing RawFrame) {
        let first = intake.withLock { i -> (@Sendable () -> Void)?? in
            guard i.phase == .taking else { return nil }
            defer { i.firstFrame = nil }
            return .some(i.firstFrame)
        }
        guard case .some(let firstFrame) = first else { return }
        firstFrame?()
        let now = Clock.monotonic()
        var context: FrameContext?
        for output in outputs where output.wants(frame, now: now) {
            if context == nil {
                // A frame the camera cropped for the zoom leaves only the rest to the outputs.
                let t = transform()
                context = FrameContext(sequence: nextSequence(), transform: frame.crop.map { t.remaining(after: $0) } ?? t, now: now)
            }
            output.take(frame, context!)
        }
    }
}

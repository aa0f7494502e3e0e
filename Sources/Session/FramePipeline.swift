// Capture → outputs, for one running camera. The capture thread offers each frame to the
// outputs registered here (CaptureOutput: preview, photos, metadata, the movie while
// recording), in the order they were registered; each says whether it wants the frame and
// takes it into its own hand-off. The pipeline knows none of them by name. What the frame's
// outputs share — its session sequence and transform — is worked out once, only when one
// of them takes it. The capture thread never waits for an output, and no lock is held while
// an output takes a frame.

import CameraCore
import SystemSupport

final class FramePipeline: Sendable {
    private let settings: PipelineSettings
    private let nextSequence: @Sendable () -> UInt64
    /// Taking frames (false once deactivated), who to tell of the first one, and the outputs:
    /// read together, one lock a frame.
    private let intake: Locked<(active: Bool, firstFrame: (@Sendable () -> Void)?, outputs: [any CaptureOutput])>

    /// `firstFrame` is told once, on the capture thread: a camera reopened after a loss is back
    /// only once it delivers. `nextSequence` numbers the frames some output takes.
    init(outputs: [any CaptureOutput], settings: PipelineSettings, nextSequence: @escaping @Sendable () -> UInt64,
         firstFrame: (@Sendable () -> Void)? = nil) {
        self.settings = settings
        self.nextSequence = nextSequence
        intake = Locked((active: true, firstFrame: firstFrame, outputs: outputs))
    }

    /// Registers `output`: it is offered the next frame.
    func attach(_ output: any CaptureOutput) {
        intake.withLock { $0.outputs.append(output) }
    }

    /// Offers `output` no more frames and tells it so.
    func detach(_ output: any CaptureOutput) {
        let removed = intake.withLock { i -> Bool in
            guard let at = i.outputs.firstIndex(where: { $0 === output }) else { return false }
            i.outputs.remove(at: at)
            return true
        }
        if removed { output.detached() }
    }

    /// The registered output of type `T`, if there is one.
    func output<T: CaptureOutput>(_ type: T.Type) -> T? {
        intake.withLock { i in i.outputs.lazy.compactMap { $0 as? T }.first }
    }

    /// After this returns no new frame from this pipeline is taken, and every output was told
    /// (each finishes or drops what it holds: waiting photos answer at once).
    func deactivate() {
        let outputs = intake.withLock { i -> [any CaptureOutput] in
            defer { i.active = false; i.outputs = [] }
            return i.active ? i.outputs : []
        }
        for o in outputs { o.detached() }
    }

    func handle(_ frame: borrowing RawFrame) {
        let (outputs, first) = intake.withLock { i -> ([any CaptureOutput], (@Sendable () -> Void)?) in
            defer { i.firstFrame = nil }
            return i.active ? (i.outputs, i.firstFrame) : ([], nil)
        }
        first?()
        let now = Clock.monotonic()
        var context: FrameContext?
        for output in outputs where output.wants(frame, now: now) {
            if context == nil {
                context = FrameContext(sequence: nextSequence(), transform: settings.transform(at: now), now: now)
            }
            output.take(frame, context!)
        }
    }
}

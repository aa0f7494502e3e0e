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
    private struct Intake {
        /// Taking frames (false once deactivated).
        var active = true
        var firstFrame: (@Sendable () -> Void)?
        /// Never changed in place: attach and detach build a new array, so storage a capture
        /// thread holds is never written by another (ThreadSanitizer cannot see the standard
        /// library's reference counts, and saw an in-place append beside the capture thread's
        /// reading as a race).
        var outputs: [any CaptureOutput]
        /// Bumped by every change of `outputs`.
        var version = 0
    }
    /// Read together, one lock a frame.
    private let intake: Locked<Intake>
    /// The capture thread's own copy of the outputs, taken again when `version` moves. Only
    /// the capture thread reads or replaces it, so the storage it iterates outside the lock is
    /// released by the thread that read it.
    private let local = CaptureThreadOutputs()

    /// `firstFrame` is told once, on the capture thread: a camera reopened after a loss is back
    /// only once it delivers. `nextSequence` numbers the frames some output takes.
    init(outputs: [any CaptureOutput], settings: PipelineSettings, nextSequence: @escaping @Sendable () -> UInt64,
         firstFrame: (@Sendable () -> Void)? = nil) {
        self.settings = settings
        self.nextSequence = nextSequence
        intake = Locked(Intake(firstFrame: firstFrame, outputs: outputs))
    }

    /// Registers `output`: it is offered the next frame.
    func attach(_ output: any CaptureOutput) {
        intake.withLock { i in
            i.outputs = i.outputs + [output]
            i.version += 1
        }
    }

    /// Offers `output` no more frames and tells it so.
    func detach(_ output: any CaptureOutput) {
        let removed = intake.withLock { i -> Bool in
            guard i.outputs.contains(where: { $0 === output }) else { return false }
            i.outputs = i.outputs.filter { $0 !== output }
            i.version += 1
            return true
        }
        if removed { output.detached() }
    }

    /// The registered outputs, in the order they are offered frames.
    var outputs: [any CaptureOutput] { intake.withLock { $0.outputs } }

    /// The registered output of type `T`, if there is one.
    func output<T: CaptureOutput>(_ type: T.Type) -> T? {
        intake.withLock { i in i.outputs.lazy.compactMap { $0 as? T }.first }
    }

    /// After this returns no new frame from this pipeline is taken, and every output was told
    /// (each finishes or drops what it holds: waiting photos answer at once).
    func deactivate() {
        let outputs = intake.withLock { i -> [any CaptureOutput] in
            defer { i.active = false; i.outputs = []; i.version += 1 }
            return i.active ? i.outputs : []
        }
        for o in outputs { o.detached() }
    }

    /// On the capture thread, for every frame.
    func handle(_ frame: borrowing RawFrame) {
        let local = self.local
        let first = intake.withLock { i -> (@Sendable () -> Void)?? in
            guard i.active else { return nil }
            if local.version != i.version {
                local.outputs = i.outputs
                local.version = i.version
            }
            defer { i.firstFrame = nil }
            return .some(i.firstFrame)
        }
        guard case .some(let firstFrame) = first else { return }
        firstFrame?()
        let now = Clock.monotonic()
        var context: FrameContext?
        for output in local.outputs where output.wants(frame, now: now) {
            if context == nil {
                context = FrameContext(sequence: nextSequence(), transform: settings.transform(at: now), now: now)
            }
            output.take(frame, context!)
        }
    }
}

/// The outputs as the capture thread last took them (FramePipeline.handle).
private final class CaptureThreadOutputs: @unchecked Sendable {  // read and written by the capture thread alone
    var outputs: [any CaptureOutput] = []
    var version = -1
}

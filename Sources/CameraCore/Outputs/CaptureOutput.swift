// What an output of a running camera is (AVCaptureOutput in spirit): the preview, photos,
// the movie and the metadata scanner are each one type conforming to this protocol, and the
// session's frame pipeline offers every frame to the outputs registered with it without
// knowing what they are. Adding an output is adding a type and registering it.
//
// Both calls run on the camera's capture thread, for every frame: `wants` must be cheap (a
// lock, no allocation), and `take` must never block — an output copies the frame into its
// FrameHandoff and returns; the shared pool's threads do the work (no output has a thread).

public protocol CaptureOutput: AnyObject, Sendable {
    /// Whether this output takes this frame (preview: someone watching; movie: recording and
    /// the timelapse is due; metadata: a scan is due and the scanner is free). `now` is
    /// monotonic seconds at the frame's arrival.
    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool

    /// Hands the frame off; called only after `wants` said yes. `context` carries what the
    /// session knows of this frame, computed once for every output that takes it.
    func take(_ frame: borrowing RawFrame, _ context: FrameContext)

    /// The pipeline offers this output no more frames (the camera stopped, switched or was
    /// lost, or the output was detached): finish or drop what is in hand. Returns once nothing
    /// of this pipeline's frames is still being worked on, unless the output says otherwise.
    func detached()

    /// What the state says of this output: its kind, whether it works now, its figures
    /// (clients are the session's to add: it knows the hubs).
    var report: OutputReport { get }
}

extension CaptureOutput {
    public func detached() {}
}

/// What the session knows of a frame beyond its bytes, worked out once per frame and only
/// when some output takes it.
public struct FrameContext: Sendable {
    /// The session's frame counter: monotonic across camera switches, the same for every
    /// output that takes this frame (a photo and a preview part of one frame share it).
    public var sequence: UInt64
    /// Zoom (the digital part), rotation and mirror as they stand at this frame.
    public var transform: FrameTransform
    /// Monotonic seconds at the frame's arrival.
    public var now: Double

    public init(sequence: UInt64, transform: FrameTransform, now: Double) {
        self.sequence = sequence
        self.transform = transform
        self.now = now
    }
}

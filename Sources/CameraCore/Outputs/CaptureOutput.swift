// What an output of a camera's session is (AVCaptureOutput in spirit): the preview, photos,
// the movie and the metadata scanner are each one type conforming to this protocol, and the
// session's frame pipeline offers every frame to its outputs without knowing what they are.
// An output is added to the session's graph once and kept across the camera's runs, as an
// AVCaptureOutput is kept while it is added: it owns its settings and what lasts (a
// recording, an event, figures), and is told when a run starts and ends — its lanes of the
// pool, its encoder, what it knows of the format, are the run's.
//
// Both calls run on the camera's capture thread, for every frame: `wants` must be cheap (a
// lock, no allocation), and `take` must never block — an output copies the frame into its
// FrameHandoff and returns; the shared pool's threads do the work (no output has a thread).

/// What every output of the graph is, whatever media it takes: a kind, the media it takes,
/// and what the state says of it.
public protocol MediaOutput: AnyObject, Sendable {
    /// Which output this is (the state's `type`, a connection's `output`).
    var kind: OutputKind { get }

    /// What this output takes from the session's inputs: video frames, audio buffers, or both.
    var mediaTypes: [MediaType] { get }

    /// What the state says of this output: its kind, whether it works now, its figures
    /// (clients are the session's to add: it knows the hubs).
    var report: OutputReport { get }
}

/// An output that takes video frames.
public protocol CaptureOutput: MediaOutput {
    /// Whether this output takes this frame (preview: someone watching; movie: recording and
    /// the timelapse is due; metadata: a scan is due and the scanner is free). `now` is
    /// monotonic seconds at the frame's arrival.
    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool

    /// Hands the frame off; called only after `wants` said yes. `context` carries what the
    /// session knows of this frame, computed once for every output that takes it.
    func take(_ frame: borrowing RawFrame, _ context: FrameContext)

    /// A run of a camera starts: frames of `run` are offered from now until `runEnded`.
    func runStarted(_ run: CaptureRun)

    /// The run offers this output no more frames (the camera stopped, switched or was lost):
    /// finish or drop what is in hand. Returns once nothing of this run's frames is still
    /// being worked on, unless the output says otherwise.
    func runEnded()
}

extension CaptureOutput {
    public var mediaTypes: [MediaType] { [.video] }
    public func runStarted(_ run: CaptureRun) {}
    public func runEnded() {}
}

/// One run of a camera: from its start (or a reopening after a loss) to its stop, switch or
/// loss. A format change is a new run.
public struct CaptureRun: Sendable, Equatable {
    /// The input's device id (`rear`): lanes and threads are named for it.
    public var camera: String
    public var format: VideoFormat
    /// Counts the session's runs: a late callback of an older run is told apart.
    public var number: Int

    public init(camera: String, format: VideoFormat, number: Int) {
        self.camera = camera
        self.format = format
        self.number = number
    }
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

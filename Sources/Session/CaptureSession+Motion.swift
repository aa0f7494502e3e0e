// The motion output on the session (issue 28): its settings (kept across starts, stops and
// switches, as the metadata output's are) and its events. The detector runs on the frame path
// (MotionOutput); what it finds comes here as `motion` events, which are published and given to
// the movie output, whose policy starts, extends or ends the event's movie (MovieOutput+Events).

import CameraCore
import Motion
import Movie

/// A change to the motion settings: each field that is set replaces the current one.
public struct MotionChange: Sendable, Equatable {
    public var enabled: Bool?
    public var threshold: Double?
    public var masks: [MotionPolygon]?
    public var preRoll: Double?
    public var postRoll: Double?
    public var record: Bool?

    public init(enabled: Bool? = nil, threshold: Double? = nil, masks: [MotionPolygon]? = nil, preRoll: Double? = nil,
                postRoll: Double? = nil, record: Bool? = nil) {
        self.enabled = enabled
        self.threshold = threshold
        self.masks = masks
        self.preRoll = preRoll
        self.postRoll = postRoll
        self.record = record
    }

    public func applied(to s: MotionSettings) -> MotionSettings {
        var n = s
        if let enabled { n.enabled = enabled }
        if let threshold { n.threshold = threshold }
        if let masks { n.masks = masks }
        if let preRoll { n.preRoll = preRoll }
        if let postRoll { n.postRoll = postRoll }
        if let record { n.record = record }
        return n
    }
}

extension CaptureSession {
    /// Changes the motion settings (all or nothing: a bad field changes none).
    @discardableResult
    public func setMotion(_ change: MotionChange) throws(SessionError) -> SessionState {
        let new = change.applied(to: graph.motion.settings)
        if let (field, message) = new.problem { throw .invalidValue("\(field): \(message)") }
        graph.motion.configure(new)
        graph.movie.updateRing()
        return announce()
    }

    /// The detector's figures since the server started (for /metrics).
    public nonisolated var motionTotals: MotionFigures {
        // The buckets copied element by element under the lock: a copy of the array would share
        // its buffer, and the capture thread counts into it (ThreadSanitizer saw the reader
        // iterate storage the writer was changing).
        graph.motion.figures.withLock { f in
            var copy = f
            copy.scoreBuckets = f.scoreBuckets.map { $0 }
            return copy
        }
    }

    /// An event started, moved or ended (from the motion output): published, and given to the
    /// movie output (its event movies).
    func motionEvent(_ e: MotionEvent) {
        events.publish(.motion(e))
        if case .moving = e.event { return }  // where it moves: for viewers; the state changes only at the start and end
        if let started = graph.movie.motion(e) { events.publish(.recording(started)) }
        announce()
    }

    /// Ends the event movie being written now (the server stops); the caller may await its file.
    public func endEventMovie() -> MovieRecorder? { graph.movie.endEventMovie() }
}

// From frames to events: a frame moves when its score reaches the threshold; an event starts
// at the first of `minimumFrames` moving frames in a row (its time is that first frame's),
// keeps its peak (the highest score, and when), and ends once no frame has moved for `quiet`
// seconds (its end is the last moving frame). Frames that judge nothing (learning, a change
// of light) neither start an event nor extend one.

import CameraCore

public struct MotionTracker: Sendable {
    public enum Transition: Sendable, Equatable {
        case started(at: Double)
        case ended(MotionEventTimes)
    }

    public var minimumFrames: Int
    public var quiet: Double
    /// The run of moving frames not yet an event: its first frame's time and its length.
    private var run: (start: Double, frames: Int)?
    private var event: MotionEventTimes?
    /// The score of the event's peak.
    public private(set) var peakScore = 0.0

    public init(minimumFrames: Int = 3, quiet: Double = 1) {
        self.minimumFrames = max(1, minimumFrames)
        self.quiet = quiet
    }

    /// The event under way: its first moving frame and its peak so far.
    public var current: MotionEventTimes? { event }

    public mutating func update(time t: Double, moving: Bool, score: Double) -> Transition? {
        if moving {
            if var e = event {
                e.end = t
                if score > peakScore { peakScore = score; e.peak = t }
                event = e
                return nil
            }
            var r = run ?? (t, 0)
            r.frames += 1
            run = r
            if r.frames >= minimumFrames {
                run = nil
                event = MotionEventTimes(start: r.start, peak: t, end: t)
                peakScore = score
                return .started(at: r.start)
            }
            return nil
        }
        run = nil
        if let e = event, t - e.end >= quiet {
            event = nil
            return .ended(e)
        }
        return nil
    }

    /// The camera stopped: an event under way ends at its last moving frame.
    public mutating func reset() -> Transition? {
        run = nil
        defer { event = nil }
        return event.map { .ended($0) }
    }
}

/// An event's times (CameraCore's `EventTimes`, which a motion movie records too).
public typealias MotionEventTimes = EventTimes

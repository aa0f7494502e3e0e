// A kept output's hand-off for the run it is in: a lane of the pool is opened when a run
// starts (named for its camera, its slots' works made afresh — an encoder is the format's)
// and closed when it ends; what the output has done adds up across its runs, as a counter
// of /metrics must.

import SystemSupport

/// A video output's lane.
public final class FrameLane<Job: Sendable>: Sendable {
    public typealias Open = @Sendable (_ run: CaptureRun) -> FrameHandoff<Job>

    private let open: Open
    private struct Lanes {
        var current: FrameHandoff<Job>?
        /// The ended runs' figures, summed.
        var past = HandoffFigures()
        var pastCopied: UInt64 = 0
        var pastLent: UInt64 = 0
    }
    private let lanes = Locked(Lanes())

    /// `open` makes the hand-off of a run.
    public init(_ open: @escaping Open) { self.open = open }

    /// Opens the lane of `run` (a lane still open is closed first).
    public func start(_ run: CaptureRun) {
        end()
        let lane = open(run)
        lanes.withLock { $0.current = lane }
    }

    /// Closes the run's lane: the frames it took are worked off before this returns (from a
    /// pool thread: the intake stops). Idempotent.
    public func end() {
        guard let lane = lanes.withLock({ $0.current }) else { return }
        lane.close()
        lanes.withLock { l in
            guard l.current === lane else { return }
            l.current = nil
            l.past = l.past + lane.figures
            l.pastCopied += lane.copied
            l.pastLent += lane.lent
        }
    }

    /// Hands the frame to the run's lane; false between runs or when the lane refused it.
    @discardableResult
    public func submit(_ frame: borrowing RawFrame, _ job: Job, keep: Bool = false) -> Bool {
        guard let lane = lanes.withLock({ $0.current }) else { return false }
        return lane.submit(frame, job, keep: keep)
    }

    /// Since the output was added, across its runs.
    public var figures: HandoffFigures {
        let (current, past) = lanes.withLock { ($0.current, $0.past) }
        return current.map { past + $0.figures } ?? past
    }

    /// The run's alone (none between runs).
    public var runFigures: HandoffFigures { lanes.withLock { $0.current }?.figures ?? HandoffFigures() }

    /// Frames taken by copying, and on the camera's lent buffer, across runs.
    public var handoffs: (copied: UInt64, lent: UInt64) {
        let (current, copied, lent) = lanes.withLock { ($0.current, $0.pastCopied, $0.pastLent) }
        return (copied + (current?.copied ?? 0), lent + (current?.lent ?? 0))
    }

    /// No frame of the run waiting or in hand (and none between runs).
    public var isIdle: Bool { lanes.withLock { $0.current }?.isIdle ?? true }
}

// The last seconds of a camera's frames, each encoded as a photo is, for a synchronized
// capture (a fleet): the frame nearest a moment is taken from here, so a command that arrives
// up to `span` late still gets the right frame and one that arrives early waits for it. It
// encodes every frame, on its lane of the shared pool — so only once `activate`d (a host's first fleet
// command): a host that never takes part in a set pays nothing. Kept across runs (activated
// once, it keeps every run's frames); the frames kept are the run's.

import CameraCore
import Foundation
import JPEG
import SystemSupport

public final class FrameRing: CaptureOutput {
    /// Seconds of frames kept.
    public let span: Double
    private let lane: FrameLane<Job>
    private struct State {
        var frames: [EncodedFrame] = []
        var waiters: [Waiter] = []
        var open = false
        /// The run's frame interval: a moment's frame is the one within half of it.
        var interval = 1.0 / 30
    }
    private let state = Locked(State())
    private let active = Locked(false)

    struct Job: Sendable {
        var sequence: UInt64
        var transform: FrameTransform
        var quality: Int
    }

    /// The answer is handed over under the waiter's lock, not through the continuation: the
    /// frame is made on a pool thread, and ThreadSanitizer does not always see a continuation
    /// resumed from a thread of our own as ordering what came before it with what the awaiting
    /// task reads after (swiftlang/swift#57803); it reported the frame's fields as racing
    /// (make test-tsan, FrameRingTests, once). The lock is an order it sees, and costs nothing
    /// that matters once per set.
    private final class Waiter: Sendable {
        let at: Double
        private struct Slot {
            var continuation: CheckedContinuation<Void, Never>?
            var answer: Result<EncodedFrame, Miss> = .failure(.stopped)
        }
        private let slot = Locked(Slot())
        init(at: Double) { self.at = at }
        func park(_ c: CheckedContinuation<Void, Never>) { slot.withLock { $0.continuation = c } }
        /// Once: a later call finds no continuation and changes nothing.
        func resume(_ answer: Result<EncodedFrame, Miss>) {
            slot.withLock { s -> CheckedContinuation<Void, Never>? in
                defer { s.continuation = nil }
                if s.continuation != nil { s.answer = answer }
                return s.continuation
            }?.resume()
        }
        /// What `resume` answered.
        var answer: Result<EncodedFrame, Miss> { slot.withLock { $0.answer } }
    }

    /// Why a moment has no frame: each a different thing for whoever asked to do (a host that
    /// stalls skips frames; a command that comes too late finds them gone).
    public enum Miss: Error, Equatable, CustomStringConvertible {
        /// The moment's frame is not among those kept: the camera skipped it (running late, as
        /// a stalled host does), the pool dropped it, or the run began after it.
        case missing
        /// The moment is older than the frames kept (the last `span` seconds).
        case older(span: Double)
        /// No frame at or after the moment came within `seconds`.
        case timedOut(seconds: Double)
        /// The camera is not running, or stopped before the moment's frame came.
        case stopped

        /// The reply's `reason` (docs/API.md, the fleet).
        public var reason: String {
            switch self {
            case .missing: "missing"
            case .older: "older"
            case .timedOut: "timedOut"
            case .stopped: "stopped"
            }
        }

        public var description: String {
            switch self {
            case .missing: "no frame of that moment: the camera skipped it (running late) or was not running then"
            case .older(let span): "that moment is older than the frames kept (the last \(span) s)"
            case .timedOut(let seconds): "no frame of that moment came within \(seconds) s"
            case .stopped: "the camera is not running (or stopped before that moment's frame)"
            }
        }
    }

    let quality: Int

    init(span: Double, quality: Int, pool: EncodePool) {
        self.span = span
        self.quality = quality
        let ring = Locked<FrameRing?>(nil)
        lane = FrameLane { run in FrameHandoff(name: "\(run.camera)-ring", policy: .queue(limit: 4), pool: pool) {
            let encoder = FrameEncoder()
            return { frame, job in
                guard let image = try? encoder.encode(frame, quality: job.quality, transform: job.transform, subsampling: .s422) else { return }
                ring.withLock { $0 }?.add(EncodedFrame(jpeg: image.jpeg, width: image.width, height: image.height,
                                                        sequence: job.sequence, timestamp: frame.timestamp))
            }
        } }
        ring.withLock { $0 = self }
    }

    public func wants(_ frame: borrowing RawFrame, now: Double) -> Bool { active.withLock { $0 } }

    public var kind: OutputKind { .ring }

    public var report: OutputReport { OutputReport(type: .ring, active: active.withLock { $0 }, figures: lane.figures) }

    /// Keeps frames from now on.
    public func activate() { active.withLock { $0 = true } }

    /// Requests waiting for their moment's frame.
    var waiting: Int { state.withLock { $0.waiters.count } }

    public func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        // A frame a set is waiting for is never the one a busy pool drops: the set would get
        // its neighbour, one frame off every other host's (issue 45, the fleet's spread).
        let t = frame.timestamp
        let wanted = state.withLock { s in s.waiters.contains { abs($0.at - t) <= s.interval } }
        lane.submit(frame, Job(sequence: context.sequence, transform: context.transform, quality: quality), keep: wanted)
    }

    public func runStarted(_ run: CaptureRun) {
        lane.start(run)
        state.withLock { s in
            s.open = true
            s.frames = []
            if run.format.fps > 0 { s.interval = 1 / Double(run.format.fps) }
        }
    }

    /// Those waiting for a frame answer nil; the frames kept stay until the next run starts.
    public func runEnded() {
        let waiters = state.withLock { s -> [Waiter] in
            s.open = false
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume(.failure(.stopped)) }
        lane.end()
    }

    private func add(_ frame: EncodedFrame) {
        let ready = state.withLock { s -> [(Waiter, Result<EncodedFrame, Miss>)] in
            s.frames.append(frame)
            s.frames.removeAll { $0.timestamp < frame.timestamp - span }
            var ready: [(Waiter, Result<EncodedFrame, Miss>)] = []
            let interval = s.interval, frames = s.frames
            s.waiters.removeAll { w in
                guard frame.timestamp >= w.at else { return false }
                ready.append((w, Self.answer(w.at, in: frames, interval: interval)))
                return true
            }
            return ready
        }
        for (w, answer) in ready { w.resume(answer) }
    }

    /// The frame of the moment `at`: the kept frame nearest it — but never a neighbour
    /// standing in for a frame that is missing (one the camera skipped or the ring lost, or a
    /// moment from before the ring's first frame): then nil, so a synchronized set reports a
    /// host with no frame for its moment rather than mixing neighbouring frames. A frame is
    /// missing where the two kept frames around `at` lie further apart than one and a half
    /// of the frame interval beside them (measured there: a camera's rate can fall in low
    /// light; `interval`, the run's nominal one, only where nothing beside them is kept).
    static func nearest(_ at: Double, in frames: [EncodedFrame], interval: Double) -> EncodedFrame? {
        guard !frames.isEmpty else { return nil }
        let after = frames.firstIndex { $0.timestamp >= at }
        let before = after.map { $0 - 1 } ?? frames.count - 1
        var beside: [Double] = []
        if before >= 1 { beside.append(frames[before].timestamp - frames[before - 1].timestamp) }
        if let a = after, a + 1 < frames.count { beside.append(frames[a + 1].timestamp - frames[a].timestamp) }
        let local = beside.min() ?? interval
        let candidates = [before >= 0 ? frames[before] : nil, after.map { frames[$0] }].compactMap { $0 }
        guard let f = candidates.min(by: { abs($0.timestamp - at) < abs($1.timestamp - at) }) else { return nil }
        if candidates.count == 2, candidates[1].timestamp - candidates[0].timestamp <= local * 1.5 + 1e-6 { return f }
        // At an edge of the ring, or beside a missing frame: only a frame of the moment itself.
        return abs(f.timestamp - at) <= local / 2 + 1e-6 ? f : nil
    }

    /// `nearest`'s frame, or `missing` where it has none.
    private static func answer(_ at: Double, in frames: [EncodedFrame], interval: Double) -> Result<EncodedFrame, Miss> {
        nearest(at, in: frames, interval: interval).map { .success($0) } ?? .failure(.missing)
    }

    /// The kept frame of the moment `at` (wall-clock seconds), once a frame at or after `at`
    /// is in; else why there is none (`Miss`).
    public func frame(nearest at: Double, timeout: Double) async throws(Miss) -> EncodedFrame {
        let waiter = Waiter(at: at)
        await withCheckedContinuation { c in
            waiter.park(c)
            let now = state.withLock { s -> Result<EncodedFrame, Miss>? in
                guard s.open else { return .failure(.stopped) }
                // Older than the ring by more than half a frame: its frame is gone.
                if let first = s.frames.first, at < first.timestamp - s.interval / 2 { return .failure(.older(span: span)) }
                if let last = s.frames.last, last.timestamp >= at { return Self.answer(at, in: s.frames, interval: s.interval) }
                s.waiters.append(waiter)
                return nil
            }
            if let now { waiter.resume(now) } else {
                Alarm.after(timeout) { [weak self] in
                    self?.state.withLock { s in s.waiters.removeAll { $0 === waiter } }  // no stale waiter stays behind
                    waiter.resume(.failure(.timedOut(seconds: timeout)))
                }
            }
        }
        return try waiter.answer.get()
    }
}

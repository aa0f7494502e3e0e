// The last seconds of a camera's frames, each encoded as a photo is, for a synchronized
// capture (a fleet): the frame nearest a moment is taken from here, so a command that arrives
// up to `span` late still gets the right frame and one that arrives early waits for it. It
// encodes every frame, on its lane of the shared pool — so only once `activate`d (a host's first fleet
// command): a host that never takes part in a set pays nothing.

import CameraCore
import Foundation
import JPEG
import SystemSupport

public final class FrameRing: CaptureOutput {
    /// Seconds of frames kept.
    public let span: Double
    private let handoff: FrameHandoff<Job>
    private let state = Locked<(frames: [EncodedFrame], waiters: [Waiter], open: Bool)>(([], [], true))
    private let active = Locked(false)

    struct Job: Sendable {
        var sequence: UInt64
        var transform: FrameTransform
        var quality: Int
    }

    private final class Waiter: Sendable {
        let at: Double
        private let continuation = Locked<CheckedContinuation<EncodedFrame?, Never>?>(nil)
        init(at: Double) { self.at = at }
        func park(_ c: CheckedContinuation<EncodedFrame?, Never>) { continuation.withLock { $0 = c } }
        func resume(_ frame: EncodedFrame?) { continuation.withLock { c in defer { c = nil }; return c }?.resume(returning: frame) }
    }

    let quality: Int

    init(name: String, span: Double, quality: Int, pool: EncodePool) {
        self.span = span
        self.quality = quality
        let ring = Locked<FrameRing?>(nil)
        handoff = FrameHandoff(name: "\(name)-ring", policy: .queue(limit: 4), pool: pool) {
            let encoder = FrameEncoder()
            return { frame, job in
                guard let image = try? encoder.encode(frame, quality: job.quality, transform: job.transform, subsampling: .s422) else { return }
                ring.withLock { $0 }?.add(EncodedFrame(jpeg: image.jpeg, width: image.width, height: image.height,
                                                        sequence: job.sequence, timestamp: frame.timestamp))
            }
        }
        ring.withLock { $0 = self }
    }

    public func wants(_ frame: borrowing RawFrame, now: Double) -> Bool { active.withLock { $0 } }

    public var report: OutputReport { OutputReport(type: .ring, active: active.withLock { $0 }, figures: handoff.figures) }

    /// Keeps frames from now on (until the camera stops).
    public func activate() { active.withLock { $0 = true } }

    /// Requests waiting for their moment's frame.
    var waiting: Int { state.withLock { $0.waiters.count } }

    public func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        handoff.submit(frame, Job(sequence: context.sequence, transform: context.transform, quality: quality))
    }

    public func detached() {
        let waiters = state.withLock { s -> [Waiter] in
            s.open = false
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume(nil) }
        handoff.close()
    }

    private func add(_ frame: EncodedFrame) {
        let ready = state.withLock { s -> [(Waiter, EncodedFrame?)] in
            s.frames.append(frame)
            s.frames.removeAll { $0.timestamp < frame.timestamp - span }
            var ready: [(Waiter, EncodedFrame?)] = []
            let gap = s.frames.count > 1 ? s.frames[1].timestamp - s.frames[0].timestamp : 0
            s.waiters.removeAll { w in
                guard frame.timestamp >= w.at else { return false }
                // A moment from before the ring's first frame (asked late, just after it started): not kept.
                let kept = w.at >= s.frames[0].timestamp - gap / 2
                ready.append((w, kept ? Self.nearest(w.at, in: s.frames) : nil))
                return true
            }
            return ready
        }
        for (w, f) in ready { w.resume(f) }
    }

    private static func nearest(_ at: Double, in frames: [EncodedFrame]) -> EncodedFrame? {
        frames.min { abs($0.timestamp - at) < abs($1.timestamp - at) }
    }

    /// The kept frame whose capture time is nearest `at` (wall-clock seconds), once a frame
    /// at or after `at` is in; nil when `at` is older than the ring, the camera stopped, or
    /// `timeout` passed.
    public func frame(nearest at: Double, timeout: Double) async -> EncodedFrame? {
        let waiter = Waiter(at: at)
        return await withCheckedContinuation { c in
            waiter.park(c)
            let now = state.withLock { s -> (done: Bool, frame: EncodedFrame?) in
                guard s.open else { return (true, nil) }
                // Older than the ring by more than half a frame: its frame is gone.
                let gap = s.frames.count > 1 ? s.frames[1].timestamp - s.frames[0].timestamp : 0
                if let first = s.frames.first, at < first.timestamp - gap / 2 { return (true, nil) }
                if let last = s.frames.last, last.timestamp >= at { return (true, Self.nearest(at, in: s.frames)) }
                s.waiters.append(waiter)
                return (false, nil)
            }
            if now.done { waiter.resume(now.frame) } else {
                Alarm.after(timeout) { [weak self] in
                    self?.state.withLock { s in s.waiters.removeAll { $0 === waiter } }  // no stale waiter stays behind
                    waiter.resume(nil)
                }
            }
        }
    }
}

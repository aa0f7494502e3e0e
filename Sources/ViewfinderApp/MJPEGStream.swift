// One viewer of the multipart MJPEG preview. It always takes the hub's newest frame, so a
// slow viewer skips frames instead of queueing them; it resends the last frame once a
// second when nothing new arrives (proxies and Home Assistant drop silent streams), and
// honours a per-client `?fps=N` cap. The cap is a schedule (GCRA), not a minimum gap: a
// frame may go out up to one interval ahead of the schedule (one frame of burst), so a cap
// equal to the camera's rate never holds a frame back, whatever the phase at which the
// viewer connected, while the long-run rate never exceeds it. (With half an interval of
// tolerance, a viewer that connected in the second half of a frame interval was held back
// at every publish and woken by a timer up to half an interval later: latency, and with
// hundreds of viewers a timer per viewer per frame.)
// Its feed is read at every frame: a viewer of the main session moves with it to the camera
// it switches to, and counts as a viewer there (each camera encodes only while watched). It
// sends the bytes the preview output published — the finished multipart part — as they are.

import CameraCore
import Foundation
import HTTPServer
import Session
import SystemSupport

final class MJPEGStream: StreamBody, Sendable {
    private let feed: PreviewFeed
    private let minInterval: Double
    private struct Schedule {
        /// The hub this viewer is counted on.
        var hub: FrameHub
        var waker: (@Sendable () -> Void)?
        var lastSequence: UInt64?
        var lastSent = -Double.infinity
        /// The next due time; sending is allowed from `due - tolerance` on.
        var due = -Double.infinity
        var closed = false
    }
    private let schedule: Locked<Schedule>

    init(feed: PreviewFeed, maxFps: Double) {
        self.feed = feed
        minInterval = maxFps > 0 ? 1 / maxFps : 0
        let hub = feed.hub
        schedule = Locked(Schedule(hub: hub))
        hub.addViewer()
    }

    func attach(waker: @escaping @Sendable () -> Void) { schedule.withLock { $0.waker = waker } }

    func next() -> StreamChunk {
        let now = Clock.monotonic()
        let hub = feed.hub
        let (moved, last, sentAt, due, waker) = schedule.withLock { s in
            var moved: FrameHub?
            if s.hub !== hub && !s.closed {
                moved = s.hub
                s.hub = hub
                s.lastSequence = nil
            }
            return (moved, s.lastSequence, s.lastSent, s.due, s.waker)
        }
        if let moved {  // the session moved to another camera: be counted there
            moved.removeViewer(ObjectIdentifier(self))
            hub.addViewer()
        }
        let allowedFrom = due - minInterval
        if let frame = hub.latestFrame {
            let fresh = frame.sequence != last && now >= allowedFrom
            if fresh || now - sentAt >= 1.0 {
                schedule.withLock {
                    $0.lastSequence = frame.sequence
                    $0.lastSent = now
                    // On a grid: a part sent a little late keeps the next one's slot, so the
                    // capture's jitter never adds up to a skipped frame when the cap is the
                    // camera's own rate (it did: runs of frames held back to the next tick);
                    // after a pause the grid starts again from now.
                    $0.due = now - due < minInterval ? due + minInterval : now + minInterval
                }
                return .data(frame.bytes)  // the part the preview output finished: sent as it is
            }
        }
        guard let waker else { return .end }
        hub.park(ObjectIdentifier(self), lastSequence: last, notBefore: allowedFrom,
                 resendAt: sentAt + 1.0, wake: waker)
        return .wait
    }

    func close() {
        let hub = schedule.withLock { s -> FrameHub? in defer { s.closed = true }; return s.closed ? nil : s.hub }
        hub?.removeViewer(ObjectIdentifier(self))
    }
}

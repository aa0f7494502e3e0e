// One viewer of the multipart MJPEG preview. It always takes the hub's newest frame, so a
// slow viewer skips frames instead of queueing them; the hub resends the last frame once a
// second when nothing new arrives, and keeps the per-client `?fps=N` cap (FrameHub.next).
// A viewer of the main session moves with it to the camera it switches to (SessionFeed), and
// counts as a viewer there (each camera encodes only while watched). It sends the bytes the
// preview output published — the finished multipart part — as they are.

import CameraCore
import HTTPServer
import Session

// @unchecked: `hub` and `slot` are touched only from the connection's polling thread (attach,
// next, close: MHD calls them for one connection on one thread, in order).
final class MJPEGStream: StreamBody, @unchecked Sendable {
    private let feed: SessionFeed
    private let maxFps: Double
    private var hub: FrameHub?
    private var slot = 0
    private var waker: (@Sendable () -> Void)?

    init(feed: SessionFeed, maxFps: Double) {
        self.feed = feed
        self.maxFps = maxFps
        (hub, slot) = feed.joinPreview(maxFps: maxFps)
    }

    func attach(waker: @escaping @Sendable () -> Void) {
        self.waker = waker
        hub?.setWaker(slot, waker)
    }

    func next() -> StreamChunk {
        while let hub {
            switch hub.next(slot) {
            case .send(let frame): return .data(frame.bytes)  // the part the preview output finished: sent as it is
            case .wait: return .wait
            case .end: return .end
            case .moved:  // the session moved to another camera: be counted there
                hub.removeViewer(slot)
                let joined = feed.joinPreview(maxFps: maxFps)
                (self.hub, slot) = joined
                if let waker { joined.hub.setWaker(joined.slot, waker) }
            }
        }
        return .end
    }

    func close() {
        hub?.removeViewer(slot)
        hub = nil
    }
}

// Which camera's session a client watches. A camera's own clients watch its session for good;
// the main session's clients watch the main feed, which MultiCamSession moves to the camera it
// switches to (as AVCaptureVideoPreviewLayer follows its session). Every kind of client joins
// through its feed — an MJPEG viewer the session's preview hub, an RTSP media, a WHEP peer or
// a live.mp4 stream its live hub — and is told `.moved` by that hub when the feed moves: one
// mechanism for every transport, at once, and no client's frame path reads the feed (a part
// costs one lock, the hub's).

import SystemSupport

public final class SessionFeed: Sendable {
    private let current: Locked<CaptureSession>
    /// A camera's own feed never moves: its clients are never told to.
    private let follows: Bool

    public init(_ session: CaptureSession, follows: Bool = false) {
        current = Locked(session)
        self.follows = follows
    }

    /// The session the feed shows now.
    public var session: CaptureSession { current.withLock { $0 } }

    private var tag: ObjectIdentifier? { follows ? ObjectIdentifier(self) : nil }

    /// An MJPEG viewer joins the current session's preview hub: its slot there. Under the
    /// feed's lock, so a move either finds it on the old hub (and tells it) or it joins the new one.
    public func joinPreview(maxFps: Double) -> (hub: FrameHub, slot: Int) {
        let tag = tag
        return current.withLock { s in (s.hub, s.hub.addViewer(maxFps: maxFps, feed: tag)) }
    }

    /// A live client joins the current session's live hub, woken by `wake`; `kind` names its
    /// transport in the state (`rtsp`, `webrtc`, `mp4`).
    public func joinLive(_ id: ObjectIdentifier, kind: String, wake: @escaping @Sendable () -> Void) -> LiveHub {
        let tag = tag
        return current.withLock { s in
            s.live.subscribe(id, kind: kind, feed: tag, wake: wake)
            return s.live
        }
    }

    /// The feed shows `session` from now on: the clients on the old one are told to follow.
    func move(to session: CaptureSession) {
        let old = current.withLock { c -> CaptureSession in defer { c = session }; return c }
        guard old !== session else { return }
        old.hub.detach(feed: ObjectIdentifier(self))
        old.live.detach(feed: ObjectIdentifier(self))
    }
}

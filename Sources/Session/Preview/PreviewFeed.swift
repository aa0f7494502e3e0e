// Which hub a viewer watches. A camera's own viewers watch its hub for good; the main
// session's viewers watch the main feed, which MultiCamSession moves to the camera it
// switches to (as AVCaptureVideoPreviewLayer follows its session). A viewer joins through
// its feed and is told `.moved` by its hub when the feed moves: its frame path never reads
// the feed, so a part costs one lock (the hub's).

import SystemSupport

public final class PreviewFeed: Sendable {
    private let current: Locked<FrameHub>
    /// A camera's own feed: its viewers are never moved.
    private let follows: Bool

    public init(_ hub: FrameHub, follows: Bool = false) {
        current = Locked(hub)
        self.follows = follows
    }

    public var hub: FrameHub { current.withLock { $0 } }

    /// A viewer joins the current hub: its slot there. Under the feed's lock, so a move
    /// either finds it on the old hub (and detaches it) or it joins the new one.
    public func join(maxFps: Double) -> (hub: FrameHub, slot: Int) {
        let id = follows ? ObjectIdentifier(self) : nil
        return current.withLock { hub in (hub, hub.addViewer(maxFps: maxFps, feed: id)) }
    }

    /// Viewers move to `hub`: those on the old one are told to follow.
    func move(to hub: FrameHub) {
        let old = current.withLock { c -> FrameHub in defer { c = hub }; return c }
        if old !== hub { old.detach(feed: ObjectIdentifier(self)) }
    }
}

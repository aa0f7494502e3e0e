// Which hub a viewer watches. A camera's own viewers watch its hub for good; the main
// session's viewers watch the main feed, which MultiCamSession moves to the camera it
// switches to (as AVCaptureVideoPreviewLayer follows its session). A viewer reads its
// feed once per frame — one lock, no call into the session or the application.

import SystemSupport

public final class PreviewFeed: Sendable {
    private let current: Locked<FrameHub>

    public init(_ hub: FrameHub) { current = Locked(hub) }

    public var hub: FrameHub { current.withLock { $0 } }

    /// Viewers move to `hub`: those parked on the old one are woken to follow.
    func move(to hub: FrameHub) {
        let old = current.withLock { c -> FrameHub in defer { c = hub }; return c }
        if old !== hub { old.wakeAll() }
    }
}

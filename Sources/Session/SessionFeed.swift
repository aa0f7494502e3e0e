// Which camera's session a client watches. A camera's own clients watch its session for good;
// the main session's clients watch the main feed, which MultiCamSession moves to the camera it
// switches to (as AVCaptureVideoPreviewLayer follows its session). Every client is a
// subscription made here — an MJPEG viewer's on the session's preview hub, an RTSP media's, a
// WHEP peer's or a live.mp4 stream's on its live hub — and is told `.moved` by that hub when
// the feed moves, and joins the new camera's hub before its next item: one mechanism for
// every transport, at once, and no client's frame path reads the feed (a part costs one
// lock, the hub's). A client's sound (FeedSound) is made here too, and moved by the feed
// itself in the same step.

import Movie
import Subscriptions
import SystemSupport

public final class SessionFeed: Sendable {
    private let current: Locked<CaptureSession>
    /// A camera's own feed never moves: its clients are never told to.
    private let follows: Bool
    /// The sound subscriptions made here, moved with the feed (held weakly: a client's own
    /// reference keeps one; `cancel` takes it out).
    private let sounds = Locked<[ObjectIdentifier: WeakSound]>([:])
    private struct WeakSound { weak var sound: FeedSound? }

    public init(_ session: CaptureSession, follows: Bool = false) {
        current = Locked(session)
        self.follows = follows
    }

    /// The session the feed shows now.
    public var session: CaptureSession { current.withLock { $0 } }

    private var tag: ObjectIdentifier? { follows ? ObjectIdentifier(self) : nil }

    /// An MJPEG viewer: the preview's parts, at most `maxFps` a second (0: every frame).
    public func preview(maxFps: Double) -> PreviewSubscription<[UInt8]> {
        PreviewSubscription(pick: { $0.bytes }) { [self] in joinPreview(maxFps: maxFps) }
    }

    /// The preview's pictures themselves (RTSP's RTP/JPEG media): each frame's JPEG and capture
    /// time, as a unit every one of which is whole alone.
    public func previewPictures() -> PreviewSubscription<EncodedUnit> {
        PreviewSubscription(pick: { f in
            EncodedUnit(bytes: Array(f.bytes[f.jpegRange]), pts: Int64((f.timestamp * 90_000).rounded()), time: f.timestamp, keyframe: true)
        }) { [self] in joinPreview(maxFps: 0) }
    }

    /// A live.mp4 client: a live stream as fMP4 bytes, until it restarts or the feed moves;
    /// with the camera's sound when `sound` and its microphone runs.
    public func liveMP4(_ stream: LiveStreamName = .main, sound: Bool = true) -> LiveMP4Subscription {
        let session = sound ? self.session : nil
        return LiveMP4Subscription(session: session) { wake in joinLive(stream, kind: "mp4", wake: wake) }
    }

    /// An RTP transport's client (`kind`: `rtsp`, `webrtc`): a live stream's access units,
    /// across new formats and moves.
    /// `baseline`: a client that decodes H.264's Constrained Baseline alone (a WebRTC viewer
    /// whose offer has no Main): whichever stream it takes is encoded so while it does.
    public func liveUnits(_ stream: LiveStreamName = .main, kind: String, baseline: Bool = false) -> LiveUnitSubscription {
        LiveUnitSubscription(stream: stream) { [self] stream, wake in joinLive(stream, kind: kind, baseline: baseline, wake: wake) }
    }

    /// A transport's sound (WebRTC: Opus): each packet of the microphone of the camera the
    /// feed shows — the new camera's from the moment the feed moves — until `cancel`.
    public func sound(_ codec: AudioTrackInfo.Codec) -> FeedSound {
        let sound = FeedSound(feed: self, codec: codec)
        if follows { sounds.withLock { $0[ObjectIdentifier(sound)] = WeakSound(sound: sound) } }
        sound.follow()
        return sound
    }

    func forget(_ sound: FeedSound) { _ = sounds.withLock { $0.removeValue(forKey: ObjectIdentifier(sound)) } }

    /// Joins the current session's preview hub: the slot there. Under the feed's lock, so a
    /// move either finds it on the old hub (and tells it) or it joins the new one.
    func joinPreview(maxFps: Double) -> (hub: FrameHub, slot: Int) {
        let tag = tag
        return current.withLock { s in (s.hub, s.hub.addViewer(maxFps: maxFps, feed: tag)) }
    }

    /// A live client joins `stream` of the current session, woken by `wake`; `kind` names its
    /// transport in the state (`rtsp`, `webrtc`, `mp4`). Under the feed's lock, so a move
    /// either finds it on the old hub (and ends its stream) or it joins the new one.
    func joinLive(_ stream: LiveStreamName, kind: String, baseline: Bool = false,
                  wake: @escaping @Sendable () -> Void) -> LiveStreamSubscription {
        let tag = tag
        return current.withLock { s in
            let joined = LiveStreamSubscription(hub: s.live(stream), kind: kind, feed: tag, baseline: baseline)
            joined.attach(wake: wake)
            return joined
        }
    }

    /// The feed shows `session` from now on: the clients on the old one are told to follow.
    func move(to session: CaptureSession) {
        let old = current.withLock { c -> CaptureSession in defer { c = session }; return c }
        guard old !== session else { return }
        old.hub.detach(feed: ObjectIdentifier(self))
        for stream in LiveStreamName.allCases { old.live(stream).detach(feed: ObjectIdentifier(self)) }
        for sound in sounds.withLock({ $0.values.compactMap(\.sound) }) { sound.follow() }
    }
}

// A transport's sound from the camera a feed shows: every packet of that camera's microphone
// in one codec, pushed from the microphone's thread (a push only queues). Sound is not pulled
// as pictures are: a picture may be skipped for the newest, a packet of sound may not — every
// one goes, in order. A feed that moves to another camera moves its sound at once, beside its
// hubs' clients (SessionFeed.move): one mechanism for all that follows the main camera. A
// microphone that starts after the subscription is joined at the next `refresh` (a WebRTC
// peer's: the WHEP sweep, each second).

import Movie
import SystemSupport

public final class FeedSound: Sendable {
    private let feed: SessionFeed
    private let codec: AudioTrackInfo.Codec
    private let deliver: @Sendable (AudioPacket) -> Void
    private struct Current {
        var session: ObjectIdentifier?
        var subscription: SoundSubscription?
        var cancelled = false
    }
    private let current = Locked(Current())

    init(feed: SessionFeed, codec: AudioTrackInfo.Codec, deliver: @escaping @Sendable (AudioPacket) -> Void) {
        self.feed = feed
        self.codec = codec
        self.deliver = deliver
    }

    /// The session whose microphone it is on (or waits for): the feed's, once it has followed.
    var session: ObjectIdentifier? { current.withLock { $0.session } }

    /// Joins the microphone of the camera the feed shows now, unless it is on it already. A
    /// subscription whose microphone stopped is kept: a reopening delivers again.
    public func refresh() {
        let session = feed.session
        let id = ObjectIdentifier(session)
        current.withLock { c in
            guard !c.cancelled, c.session != id || c.subscription == nil else { return }
            c.subscription?.cancel()
            c.session = id
            c.subscription = session.soundTrack(codec).flatMap { session.subscribeSound($0, deliver) }
        }
    }

    deinit { feed.forget(self) }

    /// No more sound (once the client ends).
    public func cancel() {
        feed.forget(self)
        current.withLock { c in
            c.cancelled = true
            c.subscription?.cancel()
            c.subscription = nil
            c.session = nil
        }
    }
}

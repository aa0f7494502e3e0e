// A transport's sound from the camera a feed shows: every packet of that camera's microphone
// in one codec, in whatever track it makes (a WebRTC viewer's Opus), as a subscription of the
// one shape. It is on the microphone before that runs, so a microphone that starts later is
// heard from its first packet (nothing polls for it). A feed that moves to another camera
// moves its sound at once, beside its hubs' clients (SessionFeed.move): one mechanism for all
// that follows the main camera.

import Movie
import Subscriptions
import SystemSupport

public final class FeedSound: Subscription, Sendable {
    public typealias Item = AudioPacket
    private let feed: SessionFeed
    private let codec: AudioTrackInfo.Codec
    private struct Current {
        var session: ObjectIdentifier?
        var inner: SoundSubscription?
        var wake: (@Sendable () -> Void)?
        var cancelled = false
    }
    private let current = Locked(Current())

    init(feed: SessionFeed, codec: AudioTrackInfo.Codec) {
        self.feed = feed
        self.codec = codec
    }

    /// The session whose microphone it is on: the feed's, once it has followed.
    var session: ObjectIdentifier? { current.withLock { $0.session } }

    /// Joins the microphone of the camera the feed shows now, unless it is on it already (the
    /// feed's call, when it makes this and when it moves).
    func follow() {
        let session = feed.session
        let id = ObjectIdentifier(session)
        let old = current.withLock { c -> SoundSubscription?? in
            guard !c.cancelled, c.session != id else { return nil }
            let old = c.inner
            c.session = id
            c.inner = session.subscribeSound(codec)
            if let wake = c.wake { c.inner?.attach(wake: wake) }
            return old
        }
        old??.cancel()
    }

    public func attach(wake: @escaping @Sendable () -> Void) {
        current.withLock { c in
            c.wake = wake
            c.inner?.attach(wake: wake)
        }
    }

    public func next() -> Pull<AudioPacket> {
        guard let inner = current.withLock({ $0.inner }) else { return .wait }
        return inner.next()
    }

    deinit { feed.forget(self) }

    /// No more sound (once the client ends).
    public func cancel() {
        feed.forget(self)
        let inner = current.withLock { c -> SoundSubscription? in
            c.cancelled = true
            c.session = nil
            defer { c.inner = nil; c.wake = nil }
            return c.inner
        }
        inner?.cancel()
    }
}

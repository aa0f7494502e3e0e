// A WebRTC peer's sound: the Opus packets of the microphone of the camera its feed shows,
// pushed from the microphone's thread straight into the peer's appsrc (a push only queues).
// The peer's SDP has its audio track from the start. A main feed that moves to another camera
// tells the relay at once, and it takes that camera's microphone (as the picture's
// subscription joins that camera's hub); a microphone that starts later than the peer is
// joined at the next check (each second: the WHEP sweep).

import Session
import Streaming
import SystemSupport

final class SoundRelay: Sendable {
    private let feed: AudioFeed
    private let source: SessionFeed
    private struct Current {
        var session: ObjectIdentifier?
        var subscription: SoundSubscription?
    }
    private let current = Locked(Current())
    private let observing = Locked<Int?>(nil)

    init(feed: AudioFeed, source: SessionFeed) {
        self.feed = feed
        self.source = source
        refresh()
        let token = source.observeMoves { [weak self] in self?.refresh() }
        observing.withLock { $0 = token }
    }

    /// Subscribes to the microphone of the camera the feed shows now, if it is not already.
    func refresh() {
        let session = source.session
        current.withLock { c in
            let id = ObjectIdentifier(session)
            // A subscription whose microphone stopped is kept: a reopening delivers again.
            guard c.session != id || c.subscription == nil else { return }
            c.subscription?.cancel()
            c.session = id
            c.subscription = session.soundTrack(.opus).flatMap { track in
                session.subscribeSound(track) { [feed] packet in feed.push(packet.bytes, time: packet.time) }
            }
        }
    }

    /// No more sound (once the peer ends).
    func stop() {
        if let token = observing.withLock({ t in defer { t = nil }; return t }) { source.stopObserving(token) }
        current.withLock { c in
            c.subscription?.cancel()
            c.subscription = nil
            c.session = nil
        }
    }
}

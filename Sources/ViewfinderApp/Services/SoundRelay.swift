// A WebRTC peer's sound: the Opus packets of the microphone of the camera its feed shows,
// pushed from the microphone's thread straight into the peer's appsrc (a push only queues).
// The peer's SDP has its audio track from the start; what fills it is checked each second
// (the WHEP sweep): a microphone that starts later is joined then, and a main feed that
// moved to another camera takes that camera's microphone — the sound follows a switch
// within a second (the picture at once: its hub tells it).

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

    init(feed: AudioFeed, source: SessionFeed) {
        self.feed = feed
        self.source = source
        refresh()
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
        current.withLock { c in
            c.subscription?.cancel()
            c.subscription = nil
            c.session = nil
        }
    }
}

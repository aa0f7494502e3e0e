// Carries one camera's live access units into a transport's feed (an RTSP media, a WebRTC
// peer): a LiveHub client that skips the fMP4 init segment and pushes each fragment's access
// unit, from a keyframe on, on the encoder's thread as the unit is made (a push only queues).
// A new format (a prepare) ends the hub's clients; an RTP stream carries on, as a camera's
// does: the feeder joins the new stream at its first IDR, whose in-band SPS gives the size.
// A feeder for `/main` follows the main session's feed: told `.moved` by its hub when the
// main camera switches, it joins the new camera's hub at once, as an MJPEG viewer does.

import Session
import Streaming
import SystemSupport

final class LiveFeeder: Sendable {
    private let feed: H264Feed
    private let source: SessionFeed
    /// The transport, for the state's counts (`rtsp`, `webrtc`).
    private let kind: String
    private let onStop: @Sendable () -> Void
    private struct State {
        var hub: LiveHub?
        var stopped = false
    }
    /// Held while draining, so units go out in order whoever wakes the feeder.
    private let state = Locked(State())
    private let alarm = Locked<Alarm?>(nil)

    /// Feeds `feed` from `source`'s camera; `onStop` runs once when the feed closes.
    init(feed: H264Feed, source: SessionFeed, kind: String, onStop: @escaping @Sendable () -> Void = {}) {
        self.feed = feed
        self.source = source
        self.kind = kind
        self.onStop = onStop
    }

    func start() {
        let a = Alarm { [weak self] in self?.checkClosed() }
        alarm.withLock { $0 = a }
        state.withLock { s in
            guard !s.stopped else { return }
            s.hub = source.joinLive(id, kind: kind) { [weak self] in self?.drain() }
        }
        // A new client is woken only once it has taken the init segment: take it now.
        drain()
        checkClosed()
    }

    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// A pipeline that went away while no unit was pushed (a camera stopped) is noticed here,
    /// each second: a push would have said so.
    private func checkClosed() {
        if feed.isClosed { return stop() }
        alarm.withLock { $0?.set(after: 1, leeway: 0.1) }
    }

    private func drain() {
        let closed = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            while let hub = s.hub {
                switch hub.next(id) {
                case .initSegment: continue
                case .fragment(let f):
                    switch feed.push(f.unit.bytes, pts: f.unit.pts, keyframe: f.unit.keyframe) {
                    case .sent: continue
                    case .keyframeWanted: hub.requestKeyframe()
                    case .closed: return true
                    }
                case .wait: return false
                case .end, .moved:  // a new format, or the main session switched cameras: joined
                    hub.unsubscribe(id)  // again (the new camera's hub), from the new stream's first IDR
                    s.hub = source.joinLive(id, kind: kind) { [weak self] in self?.drain() }
                }
            }
            return false
        }
        if closed { stop() }
    }

    /// Leaves the hub and stops checking; once.
    func stop() {
        let first = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            s.stopped = true
            s.hub?.unsubscribe(id)
            s.hub = nil
            return true
        }
        guard first else { return }
        alarm.withLock { $0?.cancel(); $0 = nil }
        onStop()
    }
}

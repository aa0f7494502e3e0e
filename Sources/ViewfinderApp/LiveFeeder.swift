// Carries one camera's live access units into a transport's feed (an RTSP media, a WebRTC
// peer): a LiveHub client that skips the fMP4 init segment and pushes each fragment's access
// unit, from a keyframe on, on the encoder's thread as the unit is made (a push only queues).
// A new format (a prepare) ends the hub's clients; an RTP stream carries on, as a camera's
// does: the feeder joins the new stream at its first IDR, whose in-band SPS gives the size.
// A feeder for `/main` re-resolves its hub each second and moves when the main camera does.

import Session
import Streaming
import SystemSupport

final class LiveFeeder: Sendable {
    private let feed: H264Feed
    private let resolve: @Sendable () -> LiveHub?
    private let onStop: @Sendable () -> Void
    private struct State {
        var hub: LiveHub?
        var stopped = false
    }
    /// Held while draining, so units go out in order whoever wakes the feeder.
    private let state = Locked(State())
    private let alarm = Locked<Alarm?>(nil)

    /// `resolve` names the hub to follow (nil: none now); `onStop` runs once when the feed closes.
    init(feed: H264Feed, resolve: @escaping @Sendable () -> LiveHub?, onStop: @escaping @Sendable () -> Void = {}) {
        self.feed = feed
        self.resolve = resolve
        self.onStop = onStop
    }

    func start() {
        let a = Alarm { [weak self] in self?.tick() }
        alarm.withLock { $0 = a }
        tick()
    }

    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// The hub to follow, checked each second; a closed feed stops the feeder.
    private func tick() {
        if feed.isClosed { return stop() }
        let wanted = resolve()
        let moved = state.withLock { s -> Bool in
            guard !s.stopped, s.hub !== wanted else { return false }
            s.hub?.unsubscribe(id)
            s.hub = wanted
            wanted?.subscribe(id) { [weak self] in self?.drain() }
            return true
        }
        alarm.withLock { $0?.set(after: 1, leeway: 0.1) }
        // A new client is woken only once it has taken the init segment: take it now.
        if moved { drain() }
    }

    private func drain() {
        let closed = state.withLock { s -> Bool in
            guard !s.stopped, let hub = s.hub else { return false }
            while true {
                switch hub.next(id) {
                case .initSegment: continue
                case .fragment(let f):
                    switch feed.push(f.unit.bytes, pts: f.unit.pts, keyframe: f.unit.keyframe) {
                    case .sent: continue
                    case .keyframeWanted: hub.requestKeyframe()
                    case .closed: return true
                    }
                case .wait: return false
                case .end:  // a new format: joined again, from the new stream's first IDR
                    hub.unsubscribe(id)
                    hub.subscribe(id) { [weak self] in self?.drain() }
                }
            }
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

// An RTP transport's subscription (an RTSP media, a WebRTC peer): each access unit from a
// keyframe on, across streams. A new format (a prepare) ends the hub's clients; an RTP stream
// carries on, as a camera's does: it joins the new stream at its first IDR, whose in-band SPS
// gives the size. Following a feed, its stream ends when the main camera switches, and it
// joins the new camera's hub at once, as an MJPEG viewer does. Moved to the camera's other
// stream (a WebRTC viewer whose link cannot carry the main one), it joins that stream's hub
// before its next unit, from the IDR the join asks for. Each stream it takes is one
// LiveStreamSubscription, the hub's own.

import CameraCore
import Subscriptions
import SystemSupport

public final class LiveUnitSubscription: UnitSubscription, Sendable {
    /// Joins `stream` of the camera the feed shows now: a subscription attached with `wake`.
    public typealias Join = @Sendable (_ stream: LiveStreamName, _ wake: @escaping @Sendable () -> Void) -> LiveStreamSubscription
    private let join: Join
    private struct State {
        var current: LiveStreamSubscription?
        var wake: (@Sendable () -> Void)?
        var cancelled = false
        /// The stream it takes now, and the one it is to take.
        var stream: LiveStreamName
        var wanted: LiveStreamName
    }
    private let state: Locked<State>

    init(stream: LiveStreamName, join: @escaping Join) {
        self.join = join
        state = Locked(State(stream: stream, wanted: stream))
    }

    /// The stream it takes (or is about to).
    public var stream: LiveStreamName { state.withLock { $0.wanted } }

    /// Takes `stream` from its next unit on (nothing when it takes it already).
    public func switchStream(to stream: LiveStreamName) {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            guard s.wanted != stream else { return nil }
            s.wanted = stream
            return s.wake
        }
        wake?()
    }

    public func attach(wake: @escaping @Sendable () -> Void) {
        let stream = state.withLock { $0.wanted }
        let joined = join(stream, wake)
        let cancelled = state.withLock { s -> Bool in
            if !s.cancelled { s.current = joined; s.wake = wake; s.stream = stream }
            return s.cancelled
        }
        if cancelled { joined.cancel() }
    }

    public func next() -> Pull<EncodedUnit> {
        while case let (current, wake, moveTo)? = state.withLock({ s in
            s.current.map { ($0, s.wake, s.wanted != s.stream ? s.wanted : nil) }
        }) {
            let result: Pull<LiveStreamSubscription.Item> = moveTo == nil ? current.next() : .end
            switch result {
            case .item(.start): continue
            case .item(.unit(let u)): return .item(EncodedUnit(bytes: u.bytes, pts: u.pts, time: u.time, keyframe: u.keyframe))
            case .wait: return .wait
            case .end:  // a new stream, the feed moved, or the other stream wanted: joined again, from its next IDR
                current.cancel()
                guard let wake else { return .end }
                let stream = moveTo ?? state.withLock { $0.wanted }
                let joined = join(stream, wake)
                let cancelled = state.withLock { s -> Bool in
                    if !s.cancelled { s.current = joined; s.stream = stream }
                    return s.cancelled
                }
                if cancelled { joined.cancel(); return .end }
            }
        }
        return .end
    }

    public func requestKeyframe() { state.withLock { $0.current }?.requestKeyframe() }

    /// What this client's link reports, shown with the stream it takes now.
    public func report(_ r: ViewerReport) { state.withLock { $0.current }?.report(r) }

    public func cancel() {
        state.withLock { s in
            s.cancelled = true
            defer { s.current = nil; s.wake = nil }
            return s.current
        }?.cancel()
    }
}

// Keeps the newest encoded frame (its finished multipart part) and hands it to every viewer: latest frame wins, nobody
// queues. Viewers park with a waker; a publish wakes those allowed to send again, and a
// one-shot timer, armed for the earliest deadline, wakes the rest at theirs (the
// once-a-second resend, a per-client fps cap) — no polling while frames flow. Its time is an
// input (a Timekeeper's `now`; the system's unless a test's), so a test moves a clock past a
// resend or a cap and calls the ticker's `tick` instead of waiting a second for it.
// Thread-safe and synchronous on purpose: it is read from libmicrohttpd's C callbacks.

import CameraCore
import Foundation
import Subscriptions
import SystemSupport

public final class FrameHub: Sendable {
    /// One viewer (an MJPEG stream): its schedule, and whether and how it is parked. Viewers
    /// live in an array, found by their slot: the per-part path is one lock and an index, no
    /// dictionary, no key.
    private struct Viewer {
        /// The SessionFeed it follows (nil: this hub for good); a move marks it `moved`.
        var feed: ObjectIdentifier?
        /// 1 / the viewer's fps cap; 0 for none.
        var minInterval: Double
        var wake: (@Sendable () -> Void)?
        var lastSequence: UInt64?
        var lastSent = -Double.infinity
        /// The next due time; sending is allowed from `due - minInterval` on.
        var due = -Double.infinity
        var parked = false
        var moved = false
        /// Monotonic time before which a new frame must not wake it (fps cap).
        var notBefore = 0.0
        /// Monotonic time at which it is woken even without a new frame (keep-alive).
        var resendAt = 0.0
    }

    private struct State {
        var latest: EncodedFrame?
        var viewers: [Viewer?] = []
        var freeSlots: [Int] = []
        var viewerCount = 0
        var frameWaiters: [UUID: (after: UInt64, continuation: CheckedContinuation<EncodedFrame?, Never>)] = [:]
        var ticker: Alarm?
        /// When the ticker fires next (infinity: not armed).
        var tickAt = Double.infinity
        // Rate measurement over the last second of publishes.
        var publishTimes: [Double] = []
        var encodedFrames: UInt64 = 0
    }
    private let state = Locked(State())
    private let timekeeper: any Timekeeper

    public var encodedFrames: UInt64 { state.withLock { $0.encodedFrames } }

    public init(timekeeper: any Timekeeper = SystemTimekeeper()) {
        self.timekeeper = timekeeper
    }

    // MARK: - Producing

    /// True while someone will look at the next frame: encode only then.
    public var hasDemand: Bool { state.withLock { s in s.viewerCount > 0 || !s.frameWaiters.isEmpty } }

    /// Makes `frame` the newest, unless a frame with a later sequence is already out (an
    /// encode worker that finished late): viewers only ever move forward. False when dropped.
    @discardableResult
    func publish(_ frame: EncodedFrame) -> Bool {
        let now = timekeeper.now
        // Parked viewers this frame may go to are unparked under the lock and woken outside it;
        // capped ones it came too early for stay parked, the ticker armed for the soonest.
        let published = state.withLock { s -> ([@Sendable () -> Void], [CheckedContinuation<EncodedFrame?, Never>])? in
            if let latest = s.latest, latest.sequence >= frame.sequence { return nil }
            s.latest = frame
            s.encodedFrames += 1
            s.publishTimes.append(now)
            if s.publishTimes.count > 120 { s.publishTimes.removeFirst(s.publishTimes.count - 120) }
            var wake: [@Sendable () -> Void] = []
            var early = Double.infinity  // the soonest a held viewer may send this frame
            for i in s.viewers.indices where s.viewers[i]?.parked == true {
                if s.viewers[i]!.notBefore <= now {
                    s.viewers[i]!.parked = false
                    if let w = s.viewers[i]!.wake { wake.append(w) }
                } else {
                    early = min(early, s.viewers[i]!.notBefore)
                }
            }
            if early < .infinity { arm(&s, at: early, now: now) }
            var ready: [CheckedContinuation<EncodedFrame?, Never>] = []
            for (token, entry) in s.frameWaiters where frame.sequence > entry.after {
                ready.append(entry.continuation)
                s.frameWaiters[token] = nil
            }
            return (wake, ready)
        }
        guard let (wake, continuations) = published else { return false }
        for w in wake { w() }
        for c in continuations { c.resume(returning: frame) }
        return true
    }

    // MARK: - Consuming

    public var latestFrame: EncodedFrame? { state.withLock { s in s.latest } }

    /// Frames published over the last second.
    public var fps: Double {
        let now = timekeeper.now
        return state.withLock { s in Double(s.publishTimes.filter { now - $0 <= 1.0 }.count) }
    }

    public var viewerCount: Int { state.withLock { s in s.viewerCount } }

    /// What a viewer does next.
    enum Pull: Sendable {
        /// Send this frame (its finished part).
        case send(EncodedFrame)
        /// Nothing to send yet: parked, its waker is called when there is.
        case wait
        /// The feed it followed moved to another hub: leave this one and join that one.
        case moved
        /// Not a viewer here (removed), or no waker to park with.
        case end
    }

    /// A viewer arrives (viewers create demand for encoding); returns its slot. `maxFps` caps
    /// its rate (0: none); `feed` is the SessionFeed it follows, if any.
    func addViewer(maxFps: Double, feed: ObjectIdentifier? = nil) -> Int {
        let v = Viewer(feed: feed, minInterval: maxFps > 0 ? 1 / maxFps : 0)
        return state.withLock { s in
            s.viewerCount += 1
            if let slot = s.freeSlots.popLast() { s.viewers[slot] = v; return slot }
            s.viewers.append(v)
            return s.viewers.count - 1
        }
    }

    /// How the viewer in `slot` is woken when parked.
    func setWaker(_ slot: Int, _ wake: @escaping @Sendable () -> Void) {
        state.withLock { s in if s.viewers[slot] != nil { s.viewers[slot]!.wake = wake } }
    }

    func removeViewer(_ slot: Int) {
        state.withLock { s in
            guard s.viewers.indices.contains(slot), s.viewers[slot] != nil else { return }
            s.viewers[slot] = nil
            s.freeSlots.append(slot)
            s.viewerCount -= 1
        }
    }

    /// The viewer in `slot` asks for its next part: the newest frame if it has not sent it and
    /// its cap allows, or the same frame again once a second passed without one (proxies and
    /// Home Assistant drop silent streams); else it is parked until a publish or the ticker
    /// wakes it. The cap is a schedule (GCRA): a part may go out up to one interval ahead of
    /// it, so a cap equal to the camera's rate never holds a frame back whatever the phase,
    /// while the long-run rate never exceeds it. One lock, held briefly.
    func next(_ slot: Int) -> Pull {
        let now = timekeeper.now
        return state.withLock { s -> Pull in
            guard s.viewers.indices.contains(slot), var v = s.viewers[slot] else { return .end }
            if v.moved { return .moved }
            let allowedFrom = v.due - v.minInterval
            if let frame = s.latest, (frame.sequence != v.lastSequence && now >= allowedFrom) || now - v.lastSent >= 1.0 {
                v.lastSequence = frame.sequence
                v.lastSent = now
                // On a grid: a part sent a little late keeps the next one's slot, so the
                // capture's jitter never adds up to a skipped frame when the cap is the
                // camera's own rate; after a pause the grid starts again from now.
                v.due = now - v.due < v.minInterval ? v.due + v.minInterval : now + v.minInterval
                v.parked = false
                s.viewers[slot] = v
                return .send(frame)
            }
            guard v.wake != nil else { return .end }
            v.parked = true
            v.notBefore = allowedFrom
            v.resendAt = v.lastSent + 1.0
            s.viewers[slot] = v
            let deadline = Self.deadline(v, newest: s.latest?.sequence)
            if deadline < .infinity { arm(&s, at: deadline, now: now) }
            return .wait
        }
    }

    /// The viewers following `feed` leave: each is told `.moved` at its next pull (parked ones
    /// are woken for it).
    func detach(feed: ObjectIdentifier) {
        let wake = state.withLock { s -> [@Sendable () -> Void] in
            var wake: [@Sendable () -> Void] = []
            for i in s.viewers.indices where s.viewers[i]?.feed == feed {
                s.viewers[i]!.moved = true
                if s.viewers[i]!.parked, let w = s.viewers[i]!.wake { wake.append(w) }
                s.viewers[i]!.parked = false
            }
            return wake
        }
        for w in wake { w() }
    }

    /// The first frame published with a sequence greater than `sequence`, or nil after
    /// `timeout` seconds. Creates demand while it waits, so an idle camera encodes one.
    public func nextFrame(after sequence: UInt64, timeout: Double) async -> EncodedFrame? {
        if let f = latestFrame, f.sequence > sequence { return f }
        let token = UUID()
        let frame = await withCheckedContinuation { (c: CheckedContinuation<EncodedFrame?, Never>) in
            // Checked again under the lock: a frame published since the look above would not wake us.
            let ready = state.withLock { s -> EncodedFrame? in
                if let f = s.latest, f.sequence > sequence { return f }
                s.frameWaiters[token] = (after: sequence, continuation: c)
                return nil
            }
            if let ready { c.resume(returning: ready); return }
            Alarm.after(timeout) { [weak self] in self?.expire(token) }
        }
        // The publisher stored the frame under this lock before it resumed us: taking it once
        // orders the frame's contents before our reads in a way ThreadSanitizer sees too (it
        // does not see a continuation's resume as ordering them, and reported the test that
        // read a frame this way).
        state.withLock { _ in }
        return frame
    }

    private func expire(_ token: UUID) {
        let entry = state.withLock { s in s.frameWaiters.removeValue(forKey: token) }
        entry?.continuation.resume(returning: nil)
    }

    // MARK: - Ticker

    /// When a parked viewer must be woken without a publish: at its cap's end if a frame it
    /// has not sent is there, else at its resend time — never while there is no frame at all
    /// (nothing to resend: its resend time, a second after a part never sent, was minus
    /// infinity, and the ticker woke a viewer that joined before the camera's first frame
    /// again and again until that frame came; FrameHubTests caught it).
    private static let slot = 0.005

    private static func deadline(_ w: Viewer, newest: UInt64?) -> Double {
        guard let newest else { return .infinity }
        return newest != w.lastSequence ? min(w.notBefore, w.resendAt) : w.resendAt
    }

    /// Makes the one-shot ticker fire at `t` (the keeper's seconds; `now` is its time now) or
    /// up to 5 ms after: deadlines are rounded up to 5 ms slots so that viewers due close
    /// together share one firing (never early: a viewer woken before its cap allows would only
    /// park again). The alarm is set by the time left, so that it keeps the keeper's time.
    private func arm(_ s: inout State, at deadline: Double, now: Double) {
        let t = (deadline / Self.slot).rounded(.up) * Self.slot
        guard t < s.tickAt else { return }
        s.tickAt = t
        if s.ticker == nil { s.ticker = Alarm { [weak self] in self?.tick() } }
        s.ticker!.set(after: max(0, t - now), leeway: 0.001)
    }

    /// Wakes the parked viewers whose time has come (the ticker's firing; a test calls it
    /// after moving its clock).
    func tick() {
        let now = timekeeper.now
        let toWake = state.withLock { s -> [@Sendable () -> Void] in
            s.tickAt = .infinity
            var wake: [@Sendable () -> Void] = []
            var next = Double.infinity
            let newest = s.latest?.sequence
            for i in s.viewers.indices where s.viewers[i]?.parked == true {
                let d = Self.deadline(s.viewers[i]!, newest: newest)
                if d <= now {
                    s.viewers[i]!.parked = false
                    if let w = s.viewers[i]!.wake { wake.append(w) }
                } else {
                    next = min(next, d)
                }
            }
            if next < .infinity { arm(&s, at: next, now: now) }
            return wake
        }
        for w in toWake { w() }
    }

    /// Wakes every parked viewer (used when the session stops or the server shuts down).
    public func wakeAll() {
        let all = state.withLock { s -> [@Sendable () -> Void] in
            var wake: [@Sendable () -> Void] = []
            for i in s.viewers.indices where s.viewers[i]?.parked == true {
                s.viewers[i]!.parked = false
                if let w = s.viewers[i]!.wake { wake.append(w) }
            }
            return wake
        }
        for w in all { w() }
    }
}

/// One MJPEG viewer's subscription: the hub's newest part each time the connection can send
/// one (a slow viewer skips frames, never queues them), the once-a-second resend and its fps
/// cap (`FrameHub.next`). Told `.moved` when the feed it follows switches cameras, it joins
/// the new camera's hub through `rejoin` before its next part, and counts as a viewer there
/// (each camera encodes only while watched). Each item is what `pick` takes of the frame: an
/// MJPEG viewer the preview output's finished multipart part, handed on as it is; RTSP's JPEG
/// media the picture and its capture time.
public final class PreviewSubscription<Item>: Subscription, @unchecked Sendable {
    // @unchecked: `hub`, `slot` and `wake` are touched only by the connection that pumps it
    // (attach, next, cancel: one thread at a time, in order).
    private let pick: @Sendable (EncodedFrame) -> Item
    private let rejoin: @Sendable () -> (hub: FrameHub, slot: Int)
    private var hub: FrameHub?
    private var slot: Int
    private var wake: (@Sendable () -> Void)?

    /// Joins at once (a viewer counts, and creates demand, from its request on).
    init(pick: @escaping @Sendable (EncodedFrame) -> Item, rejoin: @escaping @Sendable () -> (hub: FrameHub, slot: Int)) {
        self.pick = pick
        self.rejoin = rejoin
        (hub, slot) = rejoin()
    }

    public func attach(wake: @escaping @Sendable () -> Void) {
        self.wake = wake
        hub?.setWaker(slot, wake)
    }

    public func next() -> Pull<Item> {
        while let hub {
            switch hub.next(slot) {
            case .send(let frame): return .item(pick(frame))
            case .wait: return .wait
            case .end: return .end
            case .moved:
                hub.removeViewer(slot)
                let joined = rejoin()
                (self.hub, slot) = joined
                if let wake { joined.hub.setWaker(joined.slot, wake) }
            }
        }
        return .end
    }

    public func cancel() {
        hub?.removeViewer(slot)
        hub = nil
    }

    deinit { hub?.removeViewer(slot) }  // never pumped (a HEAD, or an answer not sent)
}

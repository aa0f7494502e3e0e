// Keeps the newest encoded frame (its finished multipart part) and hands it to every viewer: latest frame wins, nobody
// queues. Viewers park with a waker; a publish wakes those allowed to send again, and a
// one-shot timer, armed for the earliest deadline, wakes the rest at theirs (the
// once-a-second resend, a per-client fps cap) — no polling while frames flow.
// Thread-safe and synchronous on purpose: it is read from libmicrohttpd's C callbacks.

import CameraCore
import Foundation
import SystemSupport

public final class FrameHub: Sendable {
    /// A parked viewer.
    private struct Waiter {
        var lastSequence: UInt64?
        /// Monotonic time before which a new frame must not wake it (fps cap).
        var notBefore: Double
        /// Monotonic time at which it is woken even without a new frame (keep-alive).
        var resendAt: Double
        var wake: @Sendable () -> Void
    }

    private struct State {
        var latest: EncodedFrame?
        var nextSequence: UInt64 = 1
        var waiters: [ObjectIdentifier: Waiter] = [:]
        var viewers = 0
        var frameWaiters: [UUID: (after: UInt64, continuation: CheckedContinuation<EncodedFrame?, Never>)] = [:]
        var ticker: Alarm?
        /// When the ticker fires next (infinity: not armed).
        var tickAt = Double.infinity
        // Rate measurement over the last second of publishes.
        var publishTimes: [Double] = []
        var encodedFrames: UInt64 = 0
    }
    private let state = Locked(State())

    public var encodedFrames: UInt64 { state.withLock { $0.encodedFrames } }

    public init() {}

    // MARK: - Producing

    /// True while someone will look at the next frame: encode only then.
    public var hasDemand: Bool { state.withLock { s in s.viewers > 0 || !s.frameWaiters.isEmpty } }

    /// Takes the next session-wide sequence number (monotonic across camera switches).
    public func takeSequence() -> UInt64 {
        state.withLock { s in defer { s.nextSequence += 1 }; return s.nextSequence }
    }

    /// Makes `frame` the newest, unless a frame with a later sequence is already out (an
    /// encode worker that finished late): viewers only ever move forward. False when dropped.
    @discardableResult
    public func publish(_ frame: EncodedFrame) -> Bool {
        let now = Clock.monotonic()
        // Every parked viewer is taken out under the lock and sorted outside it: MHD's thread
        // parks viewers on this lock while hundreds are woken.
        let published = state.withLock { s -> ([ObjectIdentifier: Waiter], [CheckedContinuation<EncodedFrame?, Never>])? in
            if let latest = s.latest, latest.sequence >= frame.sequence { return nil }
            s.latest = frame
            s.encodedFrames += 1
            s.publishTimes.append(now)
            if s.publishTimes.count > 120 { s.publishTimes.removeFirst(s.publishTimes.count - 120) }
            // The parked viewers leave with their storage, and the hub starts a new one: the
            // two are never shared, so no copy-on-write decision hangs on whether this thread
            // has dropped its copy yet (ThreadSanitizer saw such a hand-over, through the
            // standard library's uninstrumented reference count, as a race).
            var parked: [ObjectIdentifier: Waiter] = [:]
            if !s.waiters.isEmpty {
                swap(&parked, &s.waiters)
                s.waiters.reserveCapacity(parked.count)
            }
            var ready: [CheckedContinuation<EncodedFrame?, Never>] = []
            for (token, entry) in s.frameWaiters where frame.sequence > entry.after {
                ready.append(entry.continuation)
                s.frameWaiters[token] = nil
            }
            return (parked, ready)
        }
        guard let (parked, continuations) = published else { return false }
        var wake: [@Sendable () -> Void] = []
        wake.reserveCapacity(parked.count)
        var held: [(ObjectIdentifier, Waiter)] = []  // capped viewers this frame came too early for
        for (id, w) in parked {
            if w.notBefore <= now { wake.append(w.wake) } else { held.append((id, w)) }
        }
        if !held.isEmpty {
            state.withLock { s in
                var early = Double.infinity  // the soonest one of them may send this frame
                for (id, w) in held where s.waiters[id] == nil {
                    s.waiters[id] = w
                    early = min(early, w.notBefore)
                }
                if early < .infinity { arm(&s, at: early) }
            }
        }
        for w in wake { w() }
        for c in continuations { c.resume(returning: frame) }
        return true
    }

    // MARK: - Consuming

    public var latestFrame: EncodedFrame? { state.withLock { s in s.latest } }

    /// Frames published over the last second.
    public var fps: Double {
        let now = Clock.monotonic()
        return state.withLock { s in Double(s.publishTimes.filter { now - $0 <= 1.0 }.count) }
    }

    public var viewerCount: Int { state.withLock { s in s.viewers } }

    /// A viewer (stream client) arrives or leaves; s.viewers create demand for encoding.
    public func addViewer() { state.withLock { s in s.viewers += 1 } }
    public func removeViewer(_ id: ObjectIdentifier) {
        state.withLock { s in
            s.viewers -= 1
            s.waiters[id] = nil
        }
    }

    /// Parks viewer `id` until a frame newer than `lastSequence` may be sent (not before
    /// `notBefore`), or until `resendAt` passes. If one is already there, wakes at once.
    public func park(_ id: ObjectIdentifier, lastSequence: UInt64?, notBefore: Double, resendAt: Double,
                     wake: @escaping @Sendable () -> Void) {
        let now = Clock.monotonic()
        let immediate = state.withLock { s -> Bool in
            if let latest = s.latest, latest.sequence != lastSequence, notBefore <= now { return true }
            let w = Waiter(lastSequence: lastSequence, notBefore: notBefore, resendAt: resendAt, wake: wake)
            s.waiters[id] = w
            arm(&s, at: Self.deadline(w, newest: s.latest?.sequence))
            return false
        }
        if immediate { wake() }
    }

    /// The first frame published with a sequence greater than `sequence`, or nil after
    /// `timeout` seconds. Creates demand while it waits, so an idle camera encodes one.
    public func nextFrame(after sequence: UInt64, timeout: Double) async -> EncodedFrame? {
        if let f = latestFrame, f.sequence > sequence { return f }
        let token = UUID()
        return await withCheckedContinuation { (c: CheckedContinuation<EncodedFrame?, Never>) in
            // Checked again under the lock: a frame published since the look above would not wake us.
            let ready = state.withLock { s -> EncodedFrame? in
                if let f = s.latest, f.sequence > sequence { return f }
                s.frameWaiters[token] = (after: sequence, continuation: c)
                return nil
            }
            if let ready { c.resume(returning: ready); return }
            Alarm.after(timeout) { [weak self] in self?.expire(token) }
        }
    }

    private func expire(_ token: UUID) {
        let entry = state.withLock { s in s.frameWaiters.removeValue(forKey: token) }
        entry?.continuation.resume(returning: nil)
    }

    // MARK: - Ticker

    /// When a parked viewer must be woken without a publish: at its cap's end if a frame it
    /// has not sent is there, else at its resend time.
    private static let slot = 0.005

    private static func deadline(_ w: Waiter, newest: UInt64?) -> Double {
        newest != nil && newest != w.lastSequence ? min(w.notBefore, w.resendAt) : w.resendAt
    }

    /// Makes the one-shot ticker fire at `t` (monotonic seconds) or up to 5 ms after: deadlines
    /// are rounded up to 5 ms slots so that viewers due close together share one firing (never
    /// early: a viewer woken before its cap allows would only park again).
    private func arm(_ s: inout State, at deadline: Double) {
        let t = (deadline / Self.slot).rounded(.up) * Self.slot
        guard t < s.tickAt else { return }
        s.tickAt = t
        if s.ticker == nil { s.ticker = Alarm { [weak self] in self?.tick() } }
        s.ticker!.set(at: t, leeway: 0.001)
    }

    private func tick() {
        let now = Clock.monotonic()
        let toWake = state.withLock { s -> [@Sendable () -> Void] in
            s.tickAt = .infinity
            var wake: [@Sendable () -> Void] = []
            var next = Double.infinity
            let newest = s.latest?.sequence
            for (id, w) in s.waiters {
                let d = Self.deadline(w, newest: newest)
                if d <= now {
                    wake.append(w.wake)
                    s.waiters[id] = nil
                } else {
                    next = min(next, d)
                }
            }
            if next < .infinity { arm(&s, at: next) }
            return wake
        }
        for w in toWake { w() }
    }

    /// Wakes every parked viewer (used when the session stops or the server shuts down).
    public func wakeAll() {
        let all = state.withLock { s -> [@Sendable () -> Void] in
            defer { s.waiters.removeAll() }
            return s.waiters.values.map(\.wake)
        }
        for w in all { w() }
    }
}

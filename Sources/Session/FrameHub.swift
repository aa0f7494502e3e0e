// Keeps the newest encoded frame and hands it to every viewer: latest frame wins, nobody
// queues. Viewers park with a waker; a publish wakes those allowed to send again, and a
// ticker wakes the rest at their deadline (the once-a-second resend, per-client fps caps).
// Thread-safe and synchronous on purpose: it is read from libmicrohttpd's C callbacks.

import CameraCore
import Foundation
import Synchronization

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
        var ticker: DispatchSourceTimer?
        // Rate measurement over the last second of publishes.
        var publishTimes: [Double] = []
        var encodedFrames: UInt64 = 0
    }
    private let state = Mutex(State())
    private let tickQueue = DispatchQueue(label: "viewfinder.framehub.tick")

    public var encodedFrames: UInt64 { state.withLock { $0.encodedFrames } }

    public init() {}

    // MARK: - Producing

    /// True while someone will look at the next frame: encode only then.
    public var hasDemand: Bool { state.withLock { s in s.viewers > 0 || !s.frameWaiters.isEmpty } }

    /// Takes the next session-wide sequence number (monotonic across camera switches).
    public func takeSequence() -> UInt64 {
        state.withLock { s in defer { s.nextSequence += 1 }; return s.nextSequence }
    }

    public func publish(_ frame: EncodedFrame) {
        let now = Clock.monotonic()
        let (toWake, continuations) = state.withLock { s -> ([@Sendable () -> Void], [CheckedContinuation<EncodedFrame?, Never>]) in
            s.latest = frame
            s.encodedFrames += 1
            s.publishTimes.append(now)
            if s.publishTimes.count > 120 { s.publishTimes.removeFirst(s.publishTimes.count - 120) }
            var wake: [@Sendable () -> Void] = []
            for (id, w) in s.waiters where w.notBefore <= now {
                wake.append(w.wake)
                s.waiters[id] = nil
            }
            var ready: [CheckedContinuation<EncodedFrame?, Never>] = []
            for (token, entry) in s.frameWaiters where frame.sequence > entry.after {
                ready.append(entry.continuation)
                s.frameWaiters[token] = nil
            }
            return (wake, ready)
        }
        for w in toWake { w() }
        for c in continuations { c.resume(returning: frame) }
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
            s.waiters[id] = Waiter(lastSequence: lastSequence, notBefore: notBefore, resendAt: resendAt, wake: wake)
            startTicker(&s)
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
            state.withLock { s in s.frameWaiters[token] = (after: sequence, continuation: c) }
            tickQueue.asyncAfter(deadline: .now() + timeout) { [weak self] in
                self?.expire(token)
            }
        }
    }

    private func expire(_ token: UUID) {
        let entry = state.withLock { s in s.frameWaiters.removeValue(forKey: token) }
        entry?.continuation.resume(returning: nil)
    }

    // MARK: - Ticker

    private func startTicker(_ s: inout State) {
        guard s.ticker == nil else { return }
        let t = DispatchSource.makeTimerSource(queue: tickQueue)
        t.schedule(deadline: .now() + 0.02, repeating: 0.02, leeway: .milliseconds(5))
        t.setEventHandler { [weak self] in self?.tick() }
        s.ticker = t
        t.resume()
    }

    private func tick() {
        let now = Clock.monotonic()
        let toWake = state.withLock { s -> [@Sendable () -> Void] in
            var wake: [@Sendable () -> Void] = []
            let newest = s.latest?.sequence
            for (id, w) in s.waiters where w.resendAt <= now || (w.notBefore <= now && newest != nil && newest != w.lastSequence) {
                wake.append(w.wake)
                s.waiters[id] = nil
            }
            if s.waiters.isEmpty { s.ticker?.cancel(); s.ticker = nil }
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

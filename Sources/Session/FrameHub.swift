// Keeps the newest encoded frame and hands it to every viewer: latest frame wins, nobody
// queues. Viewers park with a waker; a publish wakes those allowed to send again, and a
// ticker wakes the rest at their deadline (the once-a-second resend, per-client fps caps).
// Thread-safe and synchronous on purpose: it is read from libmicrohttpd's C callbacks.

import CameraCore
import Foundation

public final class FrameHub: @unchecked Sendable {
    /// A parked viewer.
    private struct Waiter {
        var lastSequence: UInt64?
        /// Monotonic time before which a new frame must not wake it (fps cap).
        var notBefore: Double
        /// Monotonic time at which it is woken even without a new frame (keep-alive).
        var resendAt: Double
        var wake: @Sendable () -> Void
    }

    private let lock = NSLock()
    private var latest: EncodedFrame?
    private var nextSequence: UInt64 = 1
    private var waiters: [ObjectIdentifier: Waiter] = [:]
    private var viewers = 0
    private var frameWaiters: [UUID: (after: UInt64, continuation: CheckedContinuation<EncodedFrame?, Never>)] = [:]
    private var ticker: DispatchSourceTimer?
    private let tickQueue = DispatchQueue(label: "viewfinder.framehub.tick")

    // Rate measurement over the last second of publishes.
    private var publishTimes: [Double] = []
    private(set) public var encodedFrames: UInt64 = 0

    public init() {}

    // MARK: - Producing

    /// True while someone will look at the next frame: encode only then.
    public var hasDemand: Bool { lock.withLock { viewers > 0 || !frameWaiters.isEmpty } }

    /// Takes the next session-wide sequence number (monotonic across camera switches).
    public func takeSequence() -> UInt64 {
        lock.withLock { defer { nextSequence += 1 }; return nextSequence }
    }

    public func publish(_ frame: EncodedFrame) {
        let now = Clock.monotonic()
        let (toWake, continuations) = lock.withLock { () -> ([@Sendable () -> Void], [CheckedContinuation<EncodedFrame?, Never>]) in
            latest = frame
            encodedFrames += 1
            publishTimes.append(now)
            if publishTimes.count > 120 { publishTimes.removeFirst(publishTimes.count - 120) }
            var wake: [@Sendable () -> Void] = []
            for (id, w) in waiters where w.notBefore <= now {
                wake.append(w.wake)
                waiters[id] = nil
            }
            var ready: [CheckedContinuation<EncodedFrame?, Never>] = []
            for (token, entry) in frameWaiters where frame.sequence > entry.after {
                ready.append(entry.continuation)
                frameWaiters[token] = nil
            }
            return (wake, ready)
        }
        for w in toWake { w() }
        for c in continuations { c.resume(returning: frame) }
    }

    // MARK: - Consuming

    public var latestFrame: EncodedFrame? { lock.withLock { latest } }

    /// Frames published over the last second.
    public var fps: Double {
        let now = Clock.monotonic()
        return lock.withLock { Double(publishTimes.filter { now - $0 <= 1.0 }.count) }
    }

    public var viewerCount: Int { lock.withLock { viewers } }

    /// A viewer (stream client) arrives or leaves; viewers create demand for encoding.
    public func addViewer() { lock.withLock { viewers += 1 } }
    public func removeViewer(_ id: ObjectIdentifier) {
        lock.withLock {
            viewers -= 1
            waiters[id] = nil
        }
    }

    /// Parks viewer `id` until a frame newer than `lastSequence` may be sent (not before
    /// `notBefore`), or until `resendAt` passes. If one is already there, wakes at once.
    public func park(_ id: ObjectIdentifier, lastSequence: UInt64?, notBefore: Double, resendAt: Double,
                     wake: @escaping @Sendable () -> Void) {
        let now = Clock.monotonic()
        let immediate = lock.withLock { () -> Bool in
            if let latest, latest.sequence != lastSequence, notBefore <= now { return true }
            waiters[id] = Waiter(lastSequence: lastSequence, notBefore: notBefore, resendAt: resendAt, wake: wake)
            startTickerLocked()
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
            lock.withLock { frameWaiters[token] = (after: sequence, continuation: c) }
            tickQueue.asyncAfter(deadline: .now() + timeout) { [weak self] in
                self?.expire(token)
            }
        }
    }

    private func expire(_ token: UUID) {
        let entry = lock.withLock { frameWaiters.removeValue(forKey: token) }
        entry?.continuation.resume(returning: nil)
    }

    // MARK: - Ticker

    private func startTickerLocked() {
        guard ticker == nil else { return }
        let t = DispatchSource.makeTimerSource(queue: tickQueue)
        t.schedule(deadline: .now() + 0.02, repeating: 0.02, leeway: .milliseconds(5))
        t.setEventHandler { [weak self] in self?.tick() }
        ticker = t
        t.resume()
    }

    private func tick() {
        let now = Clock.monotonic()
        let toWake = lock.withLock { () -> [@Sendable () -> Void] in
            var wake: [@Sendable () -> Void] = []
            let newest = latest?.sequence
            for (id, w) in waiters where w.resendAt <= now || (w.notBefore <= now && newest != nil && newest != w.lastSequence) {
                wake.append(w.wake)
                waiters[id] = nil
            }
            if waiters.isEmpty { ticker?.cancel(); ticker = nil }
            return wake
        }
        for w in toWake { w() }
    }

    /// Wakes every parked viewer (used when the session stops or the server shuts down).
    public func wakeAll() {
        let all = lock.withLock { () -> [@Sendable () -> Void] in
            defer { waiters.removeAll() }
            return waiters.values.map(\.wake)
        }
        for w in all { w() }
    }
}

// The server's one timer mechanism: every wake-up that is not a frame or a request (a
// viewer's keep-alive or fps cap, a photo's or a snapshot's timeout, an SSE heartbeat, a
// reconnect's backoff, the watchdog ping) is an Alarm on one serial queue, on monotonic time.
// Before it, timers were built three ways (a DispatchSourceTimer, asyncAfter on a global
// queue, Task.sleep loops), each with its own idea of clock and cancellation.

import Dispatch

public final class Alarm: Sendable {
    /// Every alarm fires on this queue, one at a time: handlers must be short (they wake
    /// someone; they do not do the work).
    static let queue = DispatchQueue(label: "viewfinder.alarms")

    private let timer: Locked<DispatchSourceTimer?>

    /// An alarm that is not set; `handler` runs on the alarms' queue each time it fires.
    public init(_ handler: @escaping @Sendable () -> Void) {
        let t = DispatchSource.makeTimerSource(queue: Self.queue)
        t.setEventHandler(handler: handler)
        t.schedule(deadline: .distantFuture)
        t.resume()
        timer = Locked(t)
    }

    deinit { timer.withLock { $0?.cancel() } }

    /// Fires once at monotonic time `t` (``Clock/monotonic()``), or up to `leeway` seconds
    /// after; replaces the time it was set for.
    public func set(at t: Double, leeway: Double = 0.001) {
        set(after: t - Clock.monotonic(), leeway: leeway)
    }

    /// Fires once, `seconds` from now.
    public func set(after seconds: Double, leeway: Double = 0.001) {
        let ns = Int(max(0, min(seconds, 1e6)) * 1e9)
        timer.withLock { $0?.schedule(deadline: .now() + .nanoseconds(ns), leeway: .nanoseconds(Int(leeway * 1e9))) }
    }

    /// Will not fire until set again.
    public func cancel() { timer.withLock { $0?.schedule(deadline: .distantFuture) } }

    /// Runs `handler` once, `seconds` from now (a timeout nobody cancels).
    public static func after(_ seconds: Double, _ handler: @escaping @Sendable () -> Void) {
        let ns = Int(max(0, min(seconds, 1e6)) * 1e9)
        queue.asyncAfter(deadline: .now() + .nanoseconds(ns), execute: handler)
    }

    public static func sleep(for duration: Duration) async throws(CancellationError) {
        let (s, atto) = duration.components
        try await sleep(Double(s) + Double(atto) / 1e18)
    }

    /// Suspends the calling task for `seconds`; throws at once when the task is cancelled.
    public static func sleep(_ seconds: Double) async throws(CancellationError) {
        let waiter = SleepWaiter()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                waiter.park(c)
                after(seconds) { waiter.wake(cancelled: false) }
            }
        } onCancel: {
            waiter.wake(cancelled: true)
        }
        if waiter.wasCancelled { throw CancellationError() }
    }
}

/// One sleeping task: resumed once, by the alarm or by its cancellation, whichever comes first.
private final class SleepWaiter: Sendable {
    private let state = Locked<(continuation: CheckedContinuation<Void, Never>?, done: Bool, cancelled: Bool)>((nil, false, false))

    func park(_ c: CheckedContinuation<Void, Never>) {
        let resumeNow = state.withLock { s -> Bool in
            if s.done { return true }
            s.continuation = c
            return false
        }
        if resumeNow { c.resume() }
    }

    func wake(cancelled: Bool) {
        let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard !s.done else { return nil }
            s.done = true
            s.cancelled = cancelled
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume()
    }

    var wasCancelled: Bool { state.withLock { $0.cancelled } }
}

// The one shape of a thread the project owns: it calls `step` until the owner stops it or
// `step` reports the end, then runs `end` once on the same thread; `stop` returns only once
// the thread has ended (it joins). Every device's capture — cameras (synthetic, image, V4L2)
// and microphones (synthetic, ALSA) — the WS-Discovery socket's reader and the MQTT client's
// loop run on one, so what a step may do is the same everywhere: block for a bounded time (a
// poll's timeout, a frame's interval), never for ever, or `stop` would wait as long.

import Foundation

public final class SteppingThread: Sendable {
    private let running = Locked(true)
    private let finished = DispatchSemaphore(value: 0)

    /// `step` returns false when the loop must end on its own (a lost device); `end` is told
    /// whether the owner stopped it (false means the loop ended by itself).
    public init(name: String, step: @escaping @Sendable () -> Bool, end: @escaping @Sendable (_ stoppedByOwner: Bool) -> Void = { _ in }) {
        let thread = Thread { [self] in
            ThreadName.set(name)
            while isRunning && step() {}
            end(!isRunning)
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    private var isRunning: Bool { running.withLock { $0 } }

    /// Returns once the thread has run its last step and its `end`. Idempotent.
    public func stop() {
        let was = running.withLock { r -> Bool in defer { r = false }; return r }
        if was { finished.wait() }
    }
}

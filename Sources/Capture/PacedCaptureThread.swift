// The capture thread of the cameras that make their own frames (synthetic, image): it
// ticks at the format's frame rate on the monotonic clock, as a sensor would, and drops
// ticks rather than drifting when a frame handler runs long.

import CameraCore
import Foundation

final class PacedCaptureThread: @unchecked Sendable {
    private let lock = NSLock()
    private var running = true
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the thread; `tick(sequence, timestamp)` runs once per frame interval.
    init(name: String, fps: Int, tick: @escaping @Sendable (UInt64, Double) -> Void) {
        let interval = 1.0 / Double(max(fps, 1))
        let thread = Thread { [self] in
            var sequence: UInt64 = 0
            var next = Clock.monotonic()
            while isRunning {
                tick(sequence, Clock.now())
                sequence += 1
                next += interval
                let now = Clock.monotonic()
                if next < now { next = now }  // running late: skip, don't burst
                Self.sleep(until: next)
            }
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    private var isRunning: Bool { lock.withLock { running } }

    /// Returns once the thread has delivered its last frame.
    func stop() {
        let wasRunning = lock.withLock { () -> Bool in
            defer { running = false }
            return running
        }
        if wasRunning { finished.wait() }
    }

    private static func sleep(until deadline: Double) {
        var ts = timespec(tv_sec: Int(deadline), tv_nsec: Int((deadline - deadline.rounded(.down)) * 1e9))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

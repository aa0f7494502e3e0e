// The capture thread of the cameras that make their own frames (synthetic, image): it
// ticks at the format's frame rate on the monotonic clock, as a sensor would, and drops
// ticks rather than drifting when a frame handler runs long.

import CameraCore
import Foundation
import SystemSupport

final class PacedCaptureThread: Sendable {
    private let loop: CaptureLoop

    /// Starts the thread; `tick(sequence, timestamp)` runs once per frame interval.
    init(name: String, fps: Int, tick: @escaping @Sendable (UInt64, Double) -> Void) {
        let interval = 1.0 / Double(max(fps, 1))
        let clock = Locked((sequence: UInt64(0), next: Clock.monotonic()))  // touched by the capture thread only
        loop = CaptureLoop(name: name, step: {
            let sequence = clock.withLock { $0.sequence }
            tick(sequence, Clock.now())
            let next = clock.withLock { c -> Double in
                c.sequence += 1
                c.next += interval
                let now = Clock.monotonic()
                if c.next < now { c.next = now }  // running late: skip, don't burst
                return c.next
            }
            Self.sleep(until: next)
            return true
        })
    }

    /// Returns once the thread has delivered its last frame.
    func stop() { loop.stop() }

    private static func sleep(until deadline: Double) {
        var ts = timespec(tv_sec: Int(deadline), tv_nsec: Int((deadline - deadline.rounded(.down)) * 1e9))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

// The capture thread of the cameras that make their own frames (synthetic, image): it ticks
// at the format's frame rate as a sensor would, and drops ticks rather than drifting when a
// frame handler runs long. Its frames fall on the wall clock's multiples of 1/fps since the
// epoch, each stamped with that boundary: every such camera of a fleet, on whatever host,
// exposes its frames together (as far as the hosts' clocks agree), so a synchronized capture
// across hosts shows the software's skew, not a random phase between free-running sensors.

import CameraCore
import Foundation
import SystemSupport

final class PacedCaptureThread: Sendable {
    private let loop: SteppingThread

    /// Starts the thread; `tick(sequence, timestamp)` runs once per frame interval.
    init(name: String, fps: Int, tick: @escaping @Sendable (UInt64, Double) -> Void) {
        let interval = 1.0 / Double(max(fps, 1))
        // The next boundary, counted in intervals since the epoch; touched by the capture thread only.
        let clock = Locked((sequence: UInt64(0), boundary: Self.boundary(after: Clock.now(), interval)))
        loop = SteppingThread(name: name, step: {
            let (sequence, boundary) = clock.withLock { ($0.sequence, $0.boundary) }
            Clock.sleep(untilWallClock: Double(boundary) * interval)
            tick(sequence, Double(boundary) * interval)
            clock.withLock { c in
                c.sequence += 1
                // Running late: skip to the next boundary still ahead, don't burst.
                c.boundary = max(c.boundary + 1, Self.boundary(after: Clock.now(), interval))
            }
            return true
        })
    }

    /// Returns once the thread has delivered its last frame.
    func stop() { loop.stop() }

    /// The first multiple of `interval` after `t`, as a count of intervals.
    static func boundary(after t: Double, _ interval: Double) -> UInt64 { UInt64((t / interval).rounded(.down)) + 1 }
}

// The two clocks the server reads: wall-clock time for what is stored and shown (a frame's
// exposure, a photo's name), monotonic time for intervals (rates, deadlines, timers); and the
// one wait on the wall clock, a paced device's (the synthetic camera's frames and microphone's
// buffers fall on its boundaries as a real device's clock would have them).

#if canImport(Glibc)
import Glibc
#endif

public enum Clock {
    /// Wall-clock seconds since 1970 with microsecond resolution.
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Monotonic seconds, for intervals.
    public static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Blocks the calling thread until wall-clock `deadline` (seconds since 1970), absolute on
    /// CLOCK_REALTIME: a stepped clock moves the wake-up with it. For a paced device's own
    /// thread only; what waits for an interval waits on a `Timekeeper`.
    public static func sleep(untilWallClock deadline: Double) {
        var ts = timespec(tv_sec: Int(deadline), tv_nsec: Int((deadline - deadline.rounded(.down)) * 1e9))
        while clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

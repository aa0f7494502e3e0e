// The two clocks the server reads: wall-clock time for what is stored and shown (a frame's
// exposure, a photo's name), monotonic time for intervals (rates, deadlines, timers).

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
}

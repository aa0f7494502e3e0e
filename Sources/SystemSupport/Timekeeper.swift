// What time-driven behaviour waits on and reads — a reopen's backoff, the microphone's, a zoom
// ramp's curve and its lens steps — as an input: the server's is the system's (an Alarm on
// monotonic time); a test's is a clock that the test advances (CaptureTestSupport's
// ManualTimekeeper), so a test of a backoff or a ramp asserts the waits it asks for and what
// is true at each moment, moving time past them instead of sleeping through them.

public protocol Timekeeper: Sendable {
    /// Monotonic seconds on this keeper's clock (its origin is its own).
    var now: Double { get }
    /// Suspends the calling task for `seconds` of this keeper's time; throws at once when the
    /// task is cancelled.
    func sleep(_ seconds: Double) async throws(CancellationError)
}

/// The system's time: `Alarm.sleep`.
public struct SystemTimekeeper: Timekeeper {
    public init() {}
    public var now: Double { Clock.monotonic() }
    public func sleep(_ seconds: Double) async throws(CancellationError) { try await Alarm.sleep(seconds) }
}

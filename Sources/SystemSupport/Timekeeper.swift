// What time-driven behaviour waits on — a reopen's backoff, the microphone's — as an input:
// the server's is the system's (an Alarm on monotonic time); a test's is a clock that the
// test advances (CaptureTestSupport's ManualTimekeeper), so a test of a backoff asserts the
// waits it asks for and moves time past them instead of sleeping through them.

public protocol Timekeeper: Sendable {
    /// Suspends the calling task for `seconds` of this keeper's time; throws at once when the
    /// task is cancelled.
    func sleep(_ seconds: Double) async throws(CancellationError)
}

/// The system's time: `Alarm.sleep`.
public struct SystemTimekeeper: Timekeeper {
    public init() {}
    public func sleep(_ seconds: Double) async throws(CancellationError) { try await Alarm.sleep(seconds) }
}

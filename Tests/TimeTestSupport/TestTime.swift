// How long a test waits for what it awaits. A deadline in a test bounds the wait for an
// event; it is never the property under test. Under a sanitizer every instrumented access
// costs several times its usual time and the suites share two cores, so a wait that takes
// 1 s here can take 6 s there: scripts/sanitize sets VIEWFINDER_TEST_TIME_SCALE and every
// wait helper stretches its deadline by it. A test that passes passes as fast as before; a
// test that fails fails later, never because the machine was slow.

import Foundation

public enum TestTime {
    /// VIEWFINDER_TEST_TIME_SCALE (a number >= 1), else 1.
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["VIEWFINDER_TEST_TIME_SCALE"],
              let value = Double(text), value.isFinite, value >= 1 else { return 1 }
        return value
    }()

    /// How long a test waits, unless it says otherwise, for what should happen promptly: a
    /// response, a frame, an event. Generous on purpose: before `make test` bounded how many
    /// test cases run at once (TEST_WIDTH), it ran every one at once on two cores (dozens of
    /// servers, each with cameras rendering at 30 fps), and a request that takes 50 ms alone
    /// took over 10 s there (SessionAPITests' switch, in CI); a loaded machine still can.
    public static let patience: Double = 30

    /// A deadline `seconds` from now, stretched by `scale`.
    public static func deadline(_ seconds: Double) -> Date { Date().addingTimeInterval(seconds * scale) }
}

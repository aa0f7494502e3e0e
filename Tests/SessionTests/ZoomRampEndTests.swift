// A zoom ramp of the crop alone (a camera without lens zoom) is announced when it ends, so
// every follower of the state (SSE, MQTT, the saved state) hears the factor it ended at, not
// one from part way.

import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import SystemSupport
import Testing
@testable import Session

@Suite struct ZoomRampEndTests {
    @Test func aDigitalRampsEndIsAnnounced() async throws {
        let clock = ManualTimekeeper()
        let s = try CaptureSession(camera: SyntheticCamera(id: "rear", position: .rear),
                                   configuration: SessionConfiguration(preset: "352x288", readBackInterval: 0), timekeeper: clock)
        let events = s.events.subscription(initial: [])
        events.attach {}
        defer { events.cancel() }
        let before = clock.sleeping
        let start = try await s.zoom(ZoomRequest(factor: 4, rate: 2))  // two doublings at 2 a second: 1 s
        #expect(start.zoom.ramping)
        #expect(await clock.waitForSleepers(before + 1), "its end waits on the session's clock")
        #expect(clock.requested.last.map { abs($0 - 1.001) < 1e-6 } == true, "\(clock.requested)")
        clock.advance(by: 1.01)
        let deadline = TestTime.deadline(10)
        var ended: SessionState?
        while ended == nil && Date() < deadline {
            if case .item(.state(let st)) = events.next(), !st.zoom.ramping { ended = st }
            if ended == nil { try await Task.sleep(nanoseconds: 2_000_000) }
        }
        #expect(ended?.zoom.factor == 4, "announced at its end: \(String(describing: ended?.zoom))")
    }
}

// A continuous move (ONVIF's ContinuousMove) on the session's clock: the crop's centre moves
// per frame by what its ramp says at that moment, the move ends at its own timeout or a stop,
// and it is announced twice — when it starts and when it ends — however long it runs.

import CameraCore
import CaptureTestSupport
import Foundation
import SystemSupport
import Testing
@testable import Session

@Suite(.serialized) struct ContinuousMoveTests {
    /// A C920 (lens to 5×) zoomed to 8×: the crop is 1.6×, so its centre reaches 0.5 ± 0.1875.
    func zoomedSession(_ clock: ManualTimekeeper) async throws -> CaptureSession {
        // No read-back: every state event here is the session's own announcement.
        let s = try await SessionOnFakeC920Tests.session(FakeWebcam.c920(), clock, readBack: 0)
        _ = try await s.zoom(ZoomRequest(factor: 8))
        return s
    }

    /// The state events queued on `events` now.
    func drain(_ events: EventSubscription) -> [SessionState] {
        var out: [SessionState] = []
        for _ in 0..<1000 {
            guard case .item(let e) = events.next() else { break }
            if case .state(let s) = e { out.append(s) }
        }
        return out
    }

    @Test func aFiveSecondPanMovesEveryFrameAndIsAnnouncedTwice() async throws {
        let clock = ManualTimekeeper()
        let s = try await zoomedSession(clock)
        let events = s.events.subscription(initial: [])
        events.attach {}
        defer { events.cancel() }
        let before = clock.sleeping  // the session's own waits on its clock, if any
        _ = try await s.move(MoveRequest(velocity: Point(x: 0.05, y: -0.02), duration: 5))
        #expect(drain(events).map(\.zoom.panning) == [true], "the start is announced")
        #expect(await clock.waitForSleepers(before + 1), "its end waits on the session's clock")
        for tenth in 1...50 {
            clock.advance(by: 0.1)
            let t = Double(tenth) / 10
            // What the capture thread crops the next frame about (FramePipeline's transform).
            let c = s.pipelineSettings.transform(at: clock.now).effectiveCenter
            #expect(abs(c.x - min(0.5 + 0.05 * t, 0.6875)) < 1e-9 && abs(c.y - (0.5 - 0.02 * t)) < 1e-9, "at \(t) s: \(c)")
            if tenth == 25 {
                let mid = await s.state().zoom
                #expect(mid.panning && abs(mid.center.x - 0.625) < 1e-9, "the state reads where the pan is: \(mid)")
            }
            // Asked before the last tenth: that one reaches the timeout, whose waiter may
            // announce the end on its own task at any moment after.
            if tenth == 49 { #expect(drain(events).isEmpty, "no step is announced") }
        }
        // The move's own end, on the session's clock: its timeout's waiter ran.
        let deadline = TestTime.deadline(10)
        var ended: [SessionState] = []
        while ended.isEmpty && Date() < deadline {
            ended = drain(events)
            if ended.isEmpty { try await Task.sleep(nanoseconds: 2_000_000) }
        }
        #expect(ended.count == 1 && ended.first?.zoom.panning == false, "the end is announced once")
        let end = try #require(ended.first?.zoom.center)
        #expect(abs(end.x - 0.6875) < 1e-9 && abs(end.y - 0.4) < 1e-9, "held where the crop stopped it: \(end)")
        clock.advance(by: 1)
        #expect(s.pipelineSettings.transform(at: clock.now).effectiveCenter == end, "nothing moves after its end")
        await s.stop()
    }

    @Test func aStopHoldsThePanWhereItIsAndAZoomCallEndsOnlyTheZoom() async throws {
        let clock = ManualTimekeeper()
        let s = try await zoomedSession(clock)
        _ = try await s.zoom(ZoomRequest(factor: 2))  // the lens alone: the crop's centre stays 0.5
        _ = try await s.zoom(ZoomRequest(factor: 8))
        let before = clock.sleeping  // the session's own waits on its clock, if any
        _ = try await s.move(MoveRequest(velocity: Point(x: -0.1, y: 0), zoomRate: -1, duration: 60))
        #expect(await clock.waitForSleepers(before + 2), "the move's end and the lens's next step wait on the clock")
        clock.advance(by: 0.5)
        var state = await s.state()
        #expect(state.zoom.panning && state.zoom.ramping, "both parts move: \(state.zoom)")
        // A zoom call supersedes the move's zoom; the pan goes on.
        _ = try await s.zoom(ZoomRequest(factor: 8))
        state = await s.state()
        #expect(state.zoom.panning && !state.zoom.ramping && state.zoom.factor == 8, "\(state.zoom)")
        clock.advance(by: 0.5)
        state = try await s.stopMove(pan: true, zoom: false)
        let held = state.zoom.center
        #expect(!state.zoom.panning && abs(held.x - 0.4) < 1e-9, "held at 1 s of -0.1 a second: \(held)")
        clock.advance(by: 2)
        #expect(await s.state().zoom.center == held && s.pipelineSettings.transform(at: clock.now).effectiveCenter == held)
        // Refused, nothing changed: a move without an end.
        await #expect(throws: SessionError.self) { try await s.move(MoveRequest(velocity: Point(x: 0.1, y: 0), duration: .infinity)) }
        #expect(await s.state().zoom.panning == false)
        await s.stop()
    }
}

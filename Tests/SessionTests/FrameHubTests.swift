// The MJPEG hub's schedule on a clock the test moves (issue 45: time as an input, not a
// hazard): the once-a-second resend of the newest frame to a viewer that has already sent it
// (proxies and Home Assistant drop silent streams), and the fps cap's grid with its burst of
// one — asserted at their exact moments, where a test on the wall clock could only time them.
// The ticker's firing is `tick()`, called after each move of the clock, as the alarm would.

import CameraCore
import CaptureTestSupport
import SystemSupport
import Testing
@testable import Session

@Suite struct FrameHubTests {
    static func frame(_ n: UInt64) -> EncodedFrame {
        EncodedFrame(jpeg: [0xFF, 0xD8, UInt8(truncatingIfNeeded: n), 0xFF, 0xD9], width: 2, height: 2, sequence: n, timestamp: 0)
    }

    /// One viewer as a connection drives it: woken, it pulls parts until it is parked again.
    final class Viewer: Sendable {
        let hub: FrameHub, slot: Int, clock: ManualTimekeeper
        private let woken = Locked(0)
        /// (clock time, frame sequence) of every part sent.
        let sent = Locked<[(Double, UInt64)]>([])

        init(_ hub: FrameHub, _ clock: ManualTimekeeper, maxFps: Double = 0) {
            (self.hub, self.clock) = (hub, clock)
            slot = hub.addViewer(maxFps: maxFps)
            hub.setWaker(slot) { [woken] in woken.withLock { $0 += 1 } }
        }

        var wakes: Int { woken.withLock { $0 } }

        /// Pulls until parked; the sequences it sent.
        @discardableResult
        func pump() -> [UInt64] {
            var out: [UInt64] = []
            while case .send(let f) = hub.next(slot) {
                out.append(f.sequence)
                sent.withLock { $0.append((clock.now, f.sequence)) }
                if out.count > 10 { break }  // a hub that never parks it: the test fails below
            }
            return out
        }
    }

    @Test func aViewerWithoutANewFrameGetsTheSameOneAgainASecondAfterItsLastPart() {
        let clock = ManualTimekeeper(), hub = FrameHub(timekeeper: clock)
        let v = Viewer(hub, clock)
        #expect(v.pump() == [], "no frame yet: parked")
        clock.advance(by: 5)
        hub.tick()
        #expect(v.wakes == 0, "no frame at all: nothing to resend, the ticker wakes nobody")
        hub.publish(Self.frame(1))
        #expect(v.wakes == 1, "a publish wakes it")
        #expect(v.pump() == [1], "the frame, once")
        clock.advance(by: 0.75)
        hub.tick()
        #expect(v.wakes == 1, "0.75 s: not yet")
        clock.advance(by: 0.25)
        hub.tick()
        #expect(v.wakes == 2, "1 s after its part: woken by the ticker")
        #expect(v.pump() == [1], "the same frame again, once")
        clock.advance(by: 0.5)
        hub.publish(Self.frame(2))
        #expect(v.wakes == 3 && v.pump() == [2], "a new frame goes at once")
        clock.advance(by: 0.75)
        hub.tick()
        #expect(v.wakes == 3, "the resend counts from the last part (1.5 s), not from the last resend")
        clock.advance(by: 0.25)
        hub.tick()
        #expect(v.wakes == 4 && v.pump() == [2])
    }

    /// A cap of 2 fps against a camera publishing 8 frames a second: a part may go one
    /// interval ahead of the grid (the burst of one that lets a cap equal to the camera's rate
    /// never hold a frame back), then one every 0.5 s, each the newest.
    @Test func aCappedViewerSendsOnTheCapsGridWithABurstOfOne() {
        let clock = ManualTimekeeper(), hub = FrameHub(timekeeper: clock)
        let v = Viewer(hub, clock, maxFps: 2)
        v.pump()
        for n in UInt64(1)...17 {
            hub.publish(Self.frame(n))
            hub.tick()
            v.pump()
            clock.advance(by: 0.125)
        }
        let sent = v.sent.withLock { $0 }
        #expect(sent.map(\.0) == [0, 0.125, 0.5, 1, 1.5, 2], "part times: \(sent)")
        #expect(sent.map(\.1) == [1, 2, 5, 9, 13, 17], "each the newest frame then: \(sent)")
    }

    /// A frame that came before the viewer's cap allowed it goes out at the cap's moment by
    /// the ticker, without waiting for a later publish.
    @Test func aFrameHeldByTheCapGoesOutAtTheCapsMomentByTheTicker() {
        let clock = ManualTimekeeper(), hub = FrameHub(timekeeper: clock)
        let v = Viewer(hub, clock, maxFps: 2)
        hub.publish(Self.frame(1))
        #expect(v.pump() == [1])  // on the grid from 0.5
        clock.advance(by: 0.125)
        hub.publish(Self.frame(2))
        #expect(v.wakes == 1 && v.pump() == [2], "the burst of one")  // the next may go from 0.5
        clock.advance(by: 0.125)
        hub.publish(Self.frame(3))
        #expect(v.wakes == 1 && v.pump() == [], "0.25 s: held by the cap")
        clock.advance(by: 0.125)
        hub.tick()
        #expect(v.wakes == 1, "0.375 s: still held")
        clock.advance(by: 0.125)
        hub.tick()
        #expect(v.wakes == 2 && v.pump() == [3], "0.5 s: the ticker wakes it for the held frame")
    }
}

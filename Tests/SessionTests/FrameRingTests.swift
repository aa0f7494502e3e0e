// The ring a synchronized capture takes its frame from, fed frames as a camera would (every
// 1/30 s, each encoded on the ring's own thread): a moment in the past gets the kept frame
// nearest it, one in the future waits for its frame, one older than the ring gets nothing,
// and a camera that stops answers every waiter at once. No timing is checked: the frames'
// capture times are what they are stamped with.

import CameraCore
import Foundation
@testable import Session
import Testing

@Suite struct FrameRingTests {
    static let format = VideoFormat(pixelFormat: .yuyv, width: 16, height: 8, fps: 30)
    static let interval = 1.0 / 30

    /// The ring's answer for the moment `at`: its frame, or why there is none.
    static func answer(_ ring: FrameRing, _ at: Double, timeout: Double = 30) async -> Result<EncodedFrame, FrameRing.Miss> {
        do { return .success(try await ring.frame(nearest: at, timeout: timeout)) } catch { return .failure(error) }
    }

    /// Frame `n` of a camera whose frame 0 was exposed at `t0`.
    static func feed(_ ring: FrameRing, _ n: UInt64, t0: Double) {
        let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: 16 * 8 * 2)
        bytes.withUnsafeBytes { b in
            let frame = RawFrame(format: format, bytes: b, stride: 32, sequence: n, timestamp: t0 + Double(n) * interval)
            let wanted = ring.wants(frame, now: 0)
            #expect(wanted)
            ring.take(frame, FrameContext(sequence: n, transform: FrameTransform(), now: 0))
        }
    }

    @Test func anInactiveRingTakesNothingAndAJustStartedOneKnowsNoPast() async {
        let ring = FrameRing(span: 1.0, quality: 80, pool: EncodePool(threads: 1, name: "ring"))
        ring.runStarted(CaptureRun(camera: "ring-idle", format: Self.format, number: 1))
        let bytes = [UInt8](repeating: 0, count: 16 * 8 * 2)
        let wanted = bytes.withUnsafeBytes { b in
            ring.wants(RawFrame(format: Self.format, bytes: b, stride: 32, sequence: 0, timestamp: 1), now: 0)
        }
        #expect(!wanted, "no encode until a fleet command")
        ring.activate()
        // Asked for a moment before its first frame: not the first frame, nothing.
        async let past = Self.answer(ring, 1_000.0 - 0.5)
        let deadline = Date().addingTimeInterval(10)
        while ring.waiting == 0 && Date() < deadline { await Task.yield() }
        Self.feed(ring, 0, t0: 1_000.0)
        #expect(await past.miss == .missing, "its moment came before the run's first frame")
        ring.runEnded()
    }

    @Test func theFrameNearestTheMomentEarlyLateOrGone() async {
        let ring = FrameRing(span: 1.0, quality: 80, pool: EncodePool(threads: 1, name: "ring"))
        ring.runStarted(CaptureRun(camera: "ring-test", format: Self.format, number: 1))
        let t0 = 1_000.0
        ring.activate()
        // A waiter for frame 40's moment (plus a little: 40 is still the nearest), before it exists.
        async let early = Self.answer(ring, t0 + 40 * Self.interval + 0.004)
        for n in UInt64(0)..<60 {
            Self.feed(ring, n, t0: t0)
            // The ring encodes on its own thread; a bounded queue: feed at its pace.
            if n % 3 == 2 { _ = await Self.answer(ring, t0 + Double(n) * Self.interval) }
        }
        #expect(await early.frame?.sequence == 40)
        // Late: frame 50 is kept (the ring holds a second, 30 frames).
        let late = await Self.answer(ring, t0 + 50 * Self.interval - 0.01).frame
        #expect(late?.sequence == 50 && late?.timestamp == t0 + 50 * Self.interval)
        #expect(late.map { $0.jpeg.prefix(2) == [0xFF, 0xD8] } == true, "encoded as a photo is")
        // Older than the ring: gone.
        #expect(await Self.answer(ring, t0 + 5 * Self.interval).miss == .older(span: 1.0))
        // Not there yet and not coming in time: said so once the wait is over.
        #expect(await Self.answer(ring, t0 + 400, timeout: 0.05).miss == .timedOut(seconds: 0.05))
        // A waiter for a moment that never comes is answered when the camera stops.
        async let never = Self.answer(ring, t0 + 500, timeout: 300)
        let deadline = Date().addingTimeInterval(10)
        while ring.waiting == 0 && Date() < deadline { await Task.yield() }
        #expect(ring.waiting == 1)
        let stopped = Date()
        ring.runEnded()
        #expect(await never.miss == .stopped)
        #expect(Date().timeIntervalSince(stopped) < 60, "answered by the stop, not by its 300 s timeout")
        // Detached: nothing more, and nothing waits.
        #expect(await Self.answer(ring, t0 + 59 * Self.interval).miss == .stopped)
    }

    /// A synchronized set never mixes neighbouring frames (issue 45: one of eight hosts
    /// answered with the frame next to everyone else's): where the moment's frame is missing,
    /// the answer is none, not its neighbour — while a camera whose rate fell (15 fps against
    /// a nominal 30) still gets its nearest frame.
    @Test func aMissingFrameIsNoneNotItsNeighbour() {
        let t0 = 1_000.0, i = Self.interval
        func frames(_ ns: [Int], every: Double = i) -> [EncodedFrame] {
            ns.map { EncodedFrame(jpeg: [], width: 16, height: 8, sequence: UInt64($0), timestamp: t0 + Double($0) * every) }
        }
        let gap = frames(Array(0..<40) + Array(41..<46))  // frame 40 lost
        #expect(FrameRing.nearest(t0 + 40 * i + 0.004, in: gap, interval: i) == nil, "frame 40's moment: 41 must not stand in")
        #expect(FrameRing.nearest(t0 + 39 * i + 0.004, in: gap, interval: i)?.sequence == 39, "beside the gap, a frame of the moment")
        #expect(FrameRing.nearest(t0 + 41 * i - 0.004, in: gap, interval: i)?.sequence == 41)
        let whole = frames(Array(0..<46))
        #expect(FrameRing.nearest(t0 + 40 * i + 0.004, in: whole, interval: i)?.sequence == 40)
        #expect(FrameRing.nearest(t0 + 40.5 * i - 0.001, in: whole, interval: i)?.sequence == 40, "just before the midpoint")
        let slow = frames(Array(0..<20), every: 2 * i)  // a nominal 30 fps camera delivering 15
        #expect(FrameRing.nearest(t0 + 10 * 2 * i + 1.4 * i / 2, in: slow, interval: i)?.sequence == 10)
        #expect(FrameRing.nearest(t0 - 0.02, in: whole, interval: i) == nil, "before the first frame by more than half a frame")
        #expect(FrameRing.nearest(t0 + 45 * i + 0.01, in: whole, interval: i)?.sequence == 45, "the newest, within half a frame")
    }

    /// A pool too busy to keep up drops frames from the ring's bounded queue — never the one
    /// a set is waiting for.
    @Test func aBusyPoolNeverDropsTheFrameASetWaitsFor() async {
        let pool = EncodePool(threads: 1, name: "ring-busy")
        let ring = FrameRing(span: 2.0, quality: 80, pool: pool)
        ring.runStarted(CaptureRun(camera: "ring-busy", format: Self.format, number: 1))
        ring.activate()
        let t0 = 1_000.0
        async let wanted = Self.answer(ring, t0 + 10 * Self.interval, timeout: 60)
        let deadline = Date().addingTimeInterval(10)
        while ring.waiting == 0 && Date() < deadline { await Task.yield() }
        // The pool's one thread held: frames 0…12 pile up behind it, past the queue's limit.
        let hold = DispatchSemaphore(value: 0)
        pool.perform { hold.wait() }
        for n in UInt64(0)...12 { Self.feed(ring, n, t0: t0) }
        #expect(ring.report.framesDropped > 0, "the queue was full: frames were dropped")
        hold.signal()
        #expect(await wanted.frame?.sequence == 10)
        ring.runEnded()
    }
}

extension Result {
    var frame: Success? { try? get() }
    var miss: Failure? { if case .failure(let e) = self { e } else { nil } }
}

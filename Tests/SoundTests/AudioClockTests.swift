// Stamping a sound card's buffers (AudioClock): a card whose clock runs 100 ppm fast, read
// with a scheduler's jitter, stays on the capture clock (a count of samples alone would be
// 360 ms off after an hour); an overrun's lost samples come back as silence of the same
// length, so what follows keeps its time; a stall beyond what is worth filling starts over.

import CaptureTestSupport
import Testing
@testable import Sound

@Suite struct AudioClockTests {
    /// A card at `ppm` off nominal, read every 10 ms with up to `jitter` s of lateness.
    @Test(arguments: [0.0, 100, -250])
    func theTimelineFollowsADriftingCardWithinAMillisecond(ppm: Double) {
        var clock = AudioClock(rate: 48_000)
        let trueRate = 48_000 * (1 + ppm / 1e6)
        var generator = SplitMix(seed: 3)
        var frames = 0.0, worst = 0.0, filled = 0
        let start = 1_000.0
        for _ in 0..<(60 * 100 * 5) {  // five minutes
            let truth = start + frames / trueRate
            let jitter = Double(generator.next() % 4_000) / 1e6  // 0…4 ms late
            let (silence, _, t) = clock.stamp(measured: truth + jitter, count: 480)
            filled += silence
            frames += 480
            worst = max(worst, abs(t - truth))
        }
        #expect(worst < 0.004, "the worst stamp is \(worst * 1000) ms off")
        #expect(filled == 0, "jitter is not a gap")
    }

    @Test func anOverrunsGapIsFilledWithSilenceOfItsLength() {
        var clock = AudioClock(rate: 48_000)
        var t = 0.0
        for _ in 0..<100 {
            _ = clock.stamp(measured: t, count: 480)
            t += 0.010
        }
        // 60 ms lost: the next buffer's first sample is 60 ms later than the count says.
        let (silence, _, stamp) = clock.stamp(measured: t + 0.060, count: 480)
        #expect(abs(silence - 2_880) <= 48, "\(silence) frames of silence")
        #expect(abs(stamp - (t + 0.060)) < 0.002)
        // And on from there, without another gap.
        #expect(clock.stamp(measured: stamp + 0.010, count: 480).silence == 0)
    }

    /// What failed CI's test-uvc (issue 45): an emulated USB card under load held its samples
    /// back, so a read measured late (a fill of 400 ms), then delivered them in a burst —
    /// buffers measured 400 ms before the timeline. Pulled back by a fiftieth of that at
    /// every buffer, the timeline stepped 8 ms between buffers and every WAV client ended
    /// at the "hole". Now the covered samples are dropped and the timeline runs on whole.
    @Test func aBurstAfterATooLongFillKeepsTheTimelineWhole() {
        var clock = AudioClock(rate: 48_000)
        var t = 0.0
        for _ in 0..<100 {
            _ = clock.stamp(measured: t, count: 480)
            t += 0.010
        }
        // Held back 400 ms: measured late by that much, filled with silence.
        let (fill, _, stamp) = clock.stamp(measured: t + 0.400, count: 480)
        #expect(abs(fill - 19_200) <= 48, "\(fill) frames of silence")
        var next = stamp + 0.010  // where the timeline's next buffer starts
        // The held samples arrive in a burst: 60 buffers read at once, each measured as the
        // card's count says (from t on), 400 ms before the timeline.
        var dropped = 0, kept = 0
        for k in 1...60 {
            let (silence, skip, at) = clock.stamp(measured: t + Double(k) * 0.010, count: 480)
            #expect(silence == 0)
            if skip < 480 {
                // Continuous: within what jitter's slow following moves (AudioSubscription
                // takes 5 ms as a hole).
                #expect(abs(at - next) < 0.001, "buffer \(k) starts where the last ended: \(at) against \(next)")
                next = at + Double(480 - skip) / 48_000
                kept += 480 - skip
            }
            dropped += skip
        }
        // What the fill covered is dropped, but for the last 30 ms: within jitter's reach,
        // that is followed slowly instead.
        #expect(dropped <= 19_200 && dropped >= 19_200 - 1_440 - 480, "what the fill covered is dropped: \(dropped) frames")
        #expect(kept > 0, "and after it the samples are kept again")
        // Back in step: the next buffer follows on, and jitter is jitter again.
        let (silence, skip, at) = clock.stamp(measured: next + 0.002, count: 480)
        #expect(silence == 0 && skip == 0 && abs(at - next) < 0.001)
    }

    @Test func aStallTooLongToFillStartsTheTimelineAgain() {
        var clock = AudioClock(rate: 48_000)
        _ = clock.stamp(measured: 10, count: 480)
        let (silence, _, stamp) = clock.stamp(measured: 20, count: 480)
        #expect(silence == 0 && stamp == 20)
        // A host clock stepped back: the card is "ahead" — start again from the measurement.
        let (s2, _, back) = clock.stamp(measured: 5, count: 480)
        #expect(s2 == 0 && back == 5)
    }
}

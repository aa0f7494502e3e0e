// Stamps a sound card's buffers on the capture clock. A card's own clock is not the host's:
// a USB microphone at "48 kHz" runs some tens of ppm off (100 ppm is 360 ms an hour), so a
// time counted from samples alone drifts away from the picture. Each read measures when its
// first sample was captured (now − what is still buffered), which jitters with scheduling;
// the timeline follows the measurements slowly (drift is slow, jitter is not) and counts
// samples in between. A jump beyond what jitter explains is a gap — an overrun lost samples,
// or the thread was held — and is filled with silence, so the timeline's sample count and
// its times keep agreeing and sync is not shifted for the rest of the run. The other way, a
// buffer measured well before where the timeline has got to (a fill that was too long: a
// card that held its samples back and then delivered them in a burst, as an emulated USB
// card does under load) has its covered samples dropped rather than the timeline pulled
// back: either way the timeline stays continuous — a WAV's time is its bytes — and in sync.

struct AudioClock: Sendable {
    let rate: Double
    /// Where the timeline started (capture-clock seconds) and the frames counted since.
    private var anchor: Double?
    private var frames: Int64 = 0
    /// What the timeline moved by to follow the card's clock.
    private var correction: Double = 0

    /// A measurement this far from the timeline is a gap, not jitter (a scheduler holds a
    /// thread for a few ms; an overrun loses at least a period).
    static let gapThreshold = 0.030
    /// A gap longer than this starts the timeline again instead of being filled.
    static let longestFill = 2.0
    /// How much of each measurement's error the timeline takes: slow enough to smooth
    /// jitter of milliseconds, fast enough to follow a drift of 100 ppm within seconds.
    static let follow = 0.02

    init(rate: Int) { self.rate = Double(rate) }

    /// The next buffer: `count` frames whose first was measured at `measured`. Answers the
    /// silence to insert before it (in frames), how many of its first frames to drop (their
    /// time is already on the timeline), and the time of what is kept.
    mutating func stamp(measured: Double, count: Int) -> (silence: Int, skip: Int, timestamp: Double) {
        guard let anchor else {
            self.anchor = measured
            frames = Int64(count)
            return (0, 0, measured)
        }
        var expected = anchor + Double(frames) / rate + correction
        let error = measured - expected
        var silence = 0
        if error > Self.gapThreshold && error <= Self.longestFill {
            silence = Int((error * rate).rounded())
            frames += Int64(silence)
            expected = anchor + Double(frames) / rate + correction
        } else if abs(error) > Self.longestFill {
            // Too far to fill, or the host's clock was stepped: start again from the
            // measurement (a hole the outputs see as one).
            self.anchor = measured
            frames = Int64(count)
            correction = 0
            return (0, 0, measured)
        } else if error < -Self.gapThreshold {
            // Measured before the timeline by more than jitter: the frames up to where the
            // timeline is are covered already (by a fill that was too long). Pulling the
            // timeline back would break it; dropping them keeps it whole and in sync.
            let skip = min(count, Int((-error * rate).rounded()))
            frames += Int64(count - skip)
            return (0, skip, expected)
        } else {
            // Jitter, drift, or the timeline running late (a measurement earlier than it):
            // followed slowly, never jumped, so the timeline stays continuous.
            correction += error * Self.follow
            expected += error * Self.follow
        }
        frames += Int64(count)
        return (silence, 0, expected)
    }
}

// The synthetic microphone: what the synthetic camera is to the picture, for sound — a
// signal tests and users can measure. 48 kHz mono, 16-bit: quiet noise at about −50 dBFS
// (a room), and a beep — 10 ms of a 2 kHz sine at −6 dBFS — starting exactly at every whole
// second of capture time. The synthetic camera's frames fall on the wall clock's multiples
// of 1/fps and carry their capture time in the timecode, so the beep and the frame whose
// timecode crosses the same second are simultaneous: an A/V offset measured anywhere
// downstream is what the pipeline added.
//
// Buffers are 10 ms, on the wall clock's multiples of 10 ms, each delivered when its last
// sample is "captured" (real time, as a sound card would). Running late, it catches up in
// a burst rather than skipping: a microphone's timeline has no holes. Only a thread held for
// more than a minute (a stopped process, a suspended host) starts over from now, as a card
// does after a suspend — a hole its outputs see as one (a WAV stream ends there). A loaded
// test run held it more than ten seconds (make test-tsan's start); a minute's buffers are
// 6,000 to catch up, a blink.

import CameraCore
import Foundation
import SystemSupport

public final class SyntheticMicrophone: AudioDevice {
    public static let format = AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 1)
    /// Samples per buffer: 10 ms.
    public static let period = 480
    /// The beep: 10 ms of 2 kHz at −6 dBFS (peak), from each whole second.
    public static let beepHz = 2_000.0, beepSamples = 480
    public static let beepAmplitude = 32_767 * pow(10, -6.0 / 20)
    /// Uniform noise of this half-width has an RMS of −50 dBFS (a / √3 = 32768 · 10^(−50/20)).
    static let noiseHalfWidth = 32_768 * pow(10, -50.0 / 20) * 3.0.squareRoot()

    public let name = "synthetic"
    private let loop = Locked<SteppingThread?>(nil)

    public init() {}

    public func capabilities() throws(AudioError) -> AudioCapabilities {
        AudioCapabilities(rates: [48_000], channels: [1], mixer: false, gainDb: AudioCapabilities.digitalGain)
    }

    public func start(handler: @escaping AudioHandler) throws(AudioError) -> AudioFormat {
        stop()
        let buffersPerSecond = Self.format.sampleRate / Self.period  // 100
        // The buffer under way, counted in periods since the epoch; touched by the thread only.
        let next = Locked(UInt64(Clock.now() * Double(buffersPerSecond)) + 1)
        let noise = Locked(NoiseSource(seed: 0x5EED))
        let made = SteppingThread(name: "mic-synthetic", step: {
            let k = next.withLock { $0 }
            let start = Double(k) / Double(buffersPerSecond)
            let end = Double(k + 1) / Double(buffersPerSecond)
            // Behind by more than a minute: start again from now; otherwise deliver on time
            // or catch up (a loaded host holds a thread for seconds).
            if Clock.now() - end > 60 {
                next.withLock { $0 = UInt64(Clock.now() * Double(buffersPerSecond)) + 1 }
                return true
            }
            Clock.sleep(untilWallClock: end)  // on the wall clock's 10 ms, as the frames on its 1/fps
            var samples = [Int16](repeating: 0, count: Self.period)
            noise.withLock { n in Self.render(&samples, buffer: k, buffersPerSecond: buffersPerSecond, noise: &n) }
            samples.withUnsafeBytes { raw in
                handler(AudioBuffer(format: Self.format, bytes: raw, stride: 2, sequence: k * UInt64(Self.period),
                                    timestamp: start))
            }
            next.withLock { $0 = k + 1 }
            return true
        })
        loop.withLock { $0 = made }
        return Self.format
    }

    public func stop() {
        let l = loop.withLock { l -> SteppingThread? in defer { l = nil }; return l }
        l?.stop()
    }

    /// Buffer `k` (periods since the epoch): noise, and the beep when it starts a whole second.
    static func render(_ samples: inout [Int16], buffer k: UInt64, buffersPerSecond: Int, noise: inout NoiseSource) {
        let beeping = k % UInt64(buffersPerSecond) == 0
        for i in samples.indices {
            var v = noise.next() * noiseHalfWidth
            if beeping && i < beepSamples {
                v += beepAmplitude * sin(2 * Double.pi * beepHz * Double(i) / Double(format.sampleRate))
            }
            samples[i] = Int16(max(-32_768, min(32_767, v.rounded())))
        }
    }
}

/// xorshift64*: uniform in [−1, 1), cheap and the same from a seed (tests can compare runs).
struct NoiseSource: Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 1 : seed }

    mutating func next() -> Double {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        let r = state &* 2_685_821_657_736_338_717
        return Double(r >> 11) / Double(1 << 52) - 1
    }
}

// The synthetic speaker: what the synthetic microphone is to capture, for playback — a
// speaker a test can listen to. It keeps the last 30 s it played (48 kHz mono, what a talk
// gives), so `speaker.wav?seconds=N` returns what a browser said into push-to-talk.

import CameraCore
import SystemSupport

public final class SyntheticSpeaker: SpeakerDevice {
    public let name = "synthetic"
    public static let rate = 48_000
    /// Seconds kept.
    public static let keep = 30.0
    private struct State {
        var samples: [Int16] = []
        var open = false
    }
    private let state = Locked(State())

    public init() {}

    public func open(_ format: AudioFormat) throws(AudioError) {
        guard format.encoding == .s16le, format.sampleRate == Self.rate, format.channels == 1 else {
            throw .unsupported("the synthetic speaker plays 48 kHz mono, not \(format.sampleRate) Hz × \(format.channels)")
        }
        state.withLock { $0.open = true }
    }

    public func play(_ samples: UnsafeBufferPointer<Int16>) throws(AudioError) {
        let limit = Int(Self.keep) * Self.rate
        state.withLock { s in
            guard s.open else { return }
            s.samples.append(contentsOf: samples)
            // Trimmed a second at a time, not at every buffer: a copy of 30 s per 20 ms would cost.
            if s.samples.count > limit + Self.rate { s.samples.removeFirst(s.samples.count - limit) }
        }
    }

    public func close() { state.withLock { $0.open = false } }

    /// The last `seconds` it played (up to 30 s; less when it played less), oldest first.
    public func recent(seconds: Double) -> [Int16] {
        let n = Int((min(seconds, Self.keep) * Double(Self.rate)).rounded())
        return state.withLock { Array($0.samples.suffix(n)) }
    }
}

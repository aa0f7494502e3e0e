// A USB webcam's microphone as the session sees it, modelled as the device behaves rather
// than as the code expects: a C920's two channels at 48 kHz, buffers of 10 ms paced in real
// time and stamped at their first sample; a "Mic" capture volume from 0 to +30 dB in steps
// of 0.375 dB that clamps and steps what it is asked (snd-usb-audio's volume control does);
// an unplug that ends delivery and reports ENODEV once, and refuses to open (ENOENT, as
// snd_pcm_open on a card that is gone) until it is plugged in again. The signal is a 1 kHz
// tone at −20 dBFS (at 0 dB of gain), so a test can see gain, mute and gaps in what arrives.

import CameraCore
import Foundation
import SystemSupport

public final class FakeMicrophone: AudioDevice {
    public static let format = AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 2)
    public static let gainRange = AudioCapabilities.Gain(min: 0, max: 30, step: 0.375)
    public static let toneAmplitude = 32_767 * pow(10, -20.0 / 20)

    public let name: String
    private struct State {
        var plugged = true
        var running: SteppingThread?
        var interrupted: (@Sendable (AudioError) -> Void)?
        var gainDb = 0.0
        var opens = 0
    }
    private let state = Locked(State())

    public init(name: String = "hw:CARD=C920,DEV=0", plugged: Bool = true) {
        self.name = name
        state.withLock { $0.plugged = plugged }
    }

    public var opens: Int { state.withLock { $0.opens } }
    public var isRunning: Bool { state.withLock { $0.running != nil } }
    public var mixerGain: Double { state.withLock { $0.gainDb } }

    public func capabilities() throws(AudioError) -> AudioCapabilities {
        guard state.withLock({ $0.plugged }) else { throw .alsa("snd_pcm_open \(name)", -ENOENT) }
        return AudioCapabilities(rates: [16_000, 24_000, 32_000, 48_000], channels: [2], mixer: true, gainDb: Self.gainRange)
    }

    public func setInterruptionHandler(_ handler: @escaping @Sendable (AudioError) -> Void) {
        state.withLock { $0.interrupted = handler }
    }

    public func start(handler: @escaping AudioHandler) throws(AudioError) -> AudioFormat {
        stop()
        guard state.withLock({ $0.plugged }) else { throw .alsa("snd_pcm_open \(name)", -ENOENT) }
        let frames = Self.format.sampleRate / 100
        let begin = Clock.now()
        let sent = Locked(UInt64(0))
        let loop = SteppingThread(name: "fake-mic", step: { [self] in
            let n = sent.withLock { $0 }
            let first = begin + Double(n) / Double(Self.format.sampleRate)
            let due = first + 0.010
            let wait = due - Clock.now()
            if wait > 0 { usleep(UInt32(wait * 1e6)) }  // the card's own pace: this is the device, not a test's wait
            guard state.withLock({ $0.plugged }) else { return false }
            // The mixer's gain is analog, before the converter: the tone comes in louder.
            let amplitude = Self.toneAmplitude * pow(10, state.withLock { $0.gainDb } / 20)
            var samples = [Int16](repeating: 0, count: frames * 2)
            for i in 0..<frames {
                // The converter saturates: a tone pushed past full scale clips, it does not wrap.
                let v = Int16(max(-32_768, min(32_767, amplitude * sin(2 * Double.pi * 1_000 * Double(n + UInt64(i)) / 48_000))))
                samples[2 * i] = v
                samples[2 * i + 1] = v
            }
            samples.withUnsafeBytes { raw in
                handler(AudioBuffer(format: Self.format, bytes: raw, stride: 4, sequence: n, timestamp: first))
            }
            sent.withLock { $0 += UInt64(frames) }
            return true
        }, end: { [self] byOwner in
            guard !byOwner else { return }
            let h = state.withLock { s in defer { s.running = nil }; return s.interrupted }
            h?(.alsa("snd_pcm_readi \(name)", -ENODEV))
        })
        state.withLock { s in
            s.running = loop
            s.opens += 1
        }
        return Self.format
    }

    public func stop() {
        let l = state.withLock { s -> SteppingThread? in defer { s.running = nil }; return s.running }
        l?.stop()
    }

    public func setMixerGain(_ db: Double) throws(AudioError) -> Double {
        let r = Self.gainRange
        let stepped = ((min(max(db, r.min), r.max) - r.min) / r.step).rounded() * r.step + r.min
        state.withLock { $0.gainDb = stepped }
        return stepped
    }

    /// The cable comes out: delivery ends at the next period and the loss is reported once.
    public func unplug() { state.withLock { $0.plugged = false } }

    public func replug() { state.withLock { $0.plugged = true } }
}

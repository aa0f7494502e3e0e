// A microphone on an ALSA capture PCM: a webcam's own (snd-usb-audio, found by `auto`), a
// sound card's, or a plugin's (`default`, `pulse`: PulseAudio and PipeWire reach ALSA
// clients through them). One capture thread reads a period at a time, stamps it on the
// capture clock (AudioClock) and hands it on; an overrun is counted, recovered and its gap
// filled with silence; a device that goes away (unplugged, EIO, silent for two seconds)
// ends the thread and is reported once, as a lost camera is.

import CALSA
import CameraCore
import SystemSupport

public final class ALSAMicrophone: AudioDevice {
    /// What the configuration said: a PCM name, or `auto`.
    private let configured: String
    /// Where the device is now (`auto`: the camera's sound card, looked up at every start).
    private let resolve: @Sendable () -> String?
    /// No period for this long means the device is gone.
    public let silenceTimeout: Double

    private struct State {
        var loop: SteppingThread?
        var mixer: UncheckedMixer?
        var interrupted: (@Sendable (AudioError) -> Void)?
        var capabilities: AudioCapabilities?
        var resolved: String?
        /// The gain last asked of the mixer: set again on a reopened (or replugged) device.
        var mixerGain: Double?
    }
    private let state = Locked(State())
    /// A turn, held across the device's open on purpose (the one lock held across a call,
    /// as StoreDirectory's): a probe of its capabilities (`/api/cameras`) and a start never
    /// open it at once — the second would find it busy — so the second waits for the first.
    private let opening = Locked(())
    private let overrunCount = Locked<UInt64>(0)

    /// A named PCM: `hw:CARD=C920,DEV=0`, `default`, `pulse`.
    public init(pcm: String, silenceTimeout: Double = 2) {
        configured = pcm
        resolve = { pcm }
        self.silenceTimeout = silenceTimeout
    }

    /// `auto`: the PCM `resolve` finds now (nil: the camera has no microphone).
    public init(auto resolve: @escaping @Sendable () -> String?, silenceTimeout: Double = 2) {
        configured = "auto"
        self.resolve = resolve
        self.silenceTimeout = silenceTimeout
    }

    public var name: String { state.withLock { $0.resolved } ?? (configured == "auto" ? resolve() ?? "auto" : configured) }

    public var overruns: UInt64 { overrunCount.withLock { $0 } }

    public func setInterruptionHandler(_ handler: @escaping @Sendable (AudioError) -> Void) {
        state.withLock { $0.interrupted = handler }
    }

    public func capabilities() throws(AudioError) -> AudioCapabilities {
        if let known = state.withLock({ $0.capabilities }) { return known }
        return try opening.withLock { (_: inout Void) throws(AudioError) -> AudioCapabilities in
            if let known = state.withLock({ $0.capabilities }) { return known }
            // Opened only to ask: closed again (the mixer with it) before answering.
            let (pcm, _) = try open()
            defer { pcm.close(); state.withLock { $0.mixer = nil } }
            return state.withLock { $0.capabilities } ?? pcm.pcm.capabilities
        }
    }

    public func start(handler: @escaping AudioHandler) throws(AudioError) -> AudioFormat {
        stop()
        let pcm = try opening.withLock { (_: inout Void) throws(AudioError) -> CapturePCM in
            let (pcm, mixer) = try open()
            if let gain = state.withLock({ $0.mixerGain }), let mixer { _ = try? mixer.mixer.set(gain) }
            try pcm.pcm.start()
            return pcm
        }
        let format = pcm.pcm.format
        let loop = SteppingThread(name: "mic-\(pcm.pcm.name)", step: captureStep(pcm, handler: handler), end: { [weak self] byOwner in
            guard let self, !byOwner else { return }
            let name = pcm.pcm.name
            let handler = self.state.withLock { s in defer { s.mixer = nil }; return s.interrupted }
            let lost = pcm.lost
            pcm.close()
            handler?(lost ?? .unavailable("\(name) stopped"))
        })
        state.withLock { $0.loop = loop }
        return format
    }

    public func stop() {
        let loop = state.withLock { s -> SteppingThread? in
            defer { s.loop = nil; s.mixer = nil }
            return s.loop
        }
        loop?.stop()
    }

    public func setMixerGain(_ db: Double) throws(AudioError) -> Double {
        let mixer = state.withLock { $0.mixer }
        guard let mixer else {
            // Not running: a mixer found at the last start still takes the gain, set again at the next.
            guard state.withLock({ $0.capabilities?.mixer }) == true else { throw .noMixer }
            let range = state.withLock { $0.capabilities?.gainDb } ?? AudioCapabilities.digitalGain
            let kept = min(max(db, range.min), range.max)
            state.withLock { $0.mixerGain = kept }
            return kept
        }
        let got = try mixer.mixer.set(db)
        state.withLock { $0.mixerGain = got }
        return got
    }

    /// Opens and configures the PCM the configuration names now, and its card's mixer.
    private func open() throws(AudioError) -> (CapturePCM, UncheckedMixer?) {
        guard let name = resolve() else {
            throw .unavailable("the camera has no sound card of its own (audio \"auto\")")
        }
        let pcm = try ALSAPCM(name: name, direction: .capture)
        // Periods of 10 ms (a buffer is handed on as soon as its period is in), and half a
        // second of them in the device's buffer: a capture thread held up for longer than the
        // eight periods it had (80 ms: a loaded machine, a VM without KVM counted 11–21
        // overruns in its first seconds) loses the sound as silence, while a longer buffer costs
        // no latency — the thread still wakes at every period and reads what is there.
        try pcm.configure(periods: 50)
        let mixer = pcm.card.flatMap { ALSAMixer(card: "hw:\($0)") }.map(UncheckedMixer.init)
        var caps = pcm.capabilities
        if let m = mixer {
            caps.mixer = true
            caps.gainDb = m.mixer.range
        }
        state.withLock { s in
            s.capabilities = caps
            s.resolved = name
            s.mixer = mixer
        }
        return (CapturePCM(pcm), mixer)
    }

    /// One period: wait, read, stamp, deliver. False ends the thread (the device is lost).
    private func captureStep(_ capture: CapturePCM, handler: @escaping AudioHandler) -> @Sendable () -> Bool {
        let timeout = silenceTimeout
        return { [overrunCount] in
            let pcm = capture.pcm, format = pcm.format
            do throws(AudioError) {
                guard try pcm.wait(ms: 100) else {
                    capture.idle += 0.1
                    if capture.idle >= timeout {
                        capture.lost = .unavailable("\(pcm.name): no sound in \(timeout) s")
                        return false
                    }
                    return true
                }
                capture.idle = 0
                let n = try pcm.read(into: capture.buffer.baseAddress!, frames: pcm.periodFrames)
                guard n > 0 else { return true }
                let measured = Clock.now() - Double(n + pcm.delay()) / Double(format.sampleRate)
                let (silence, skip, timestamp) = capture.clock.stamp(measured: measured, count: n)
                if silence > 0 {
                    // The gap, as silence in periods: outputs see buffers of the device's size.
                    let zeros = [UInt8](repeating: 0, count: pcm.periodFrames * format.bytesPerFrame)
                    var left = silence
                    while left > 0 {
                        let n = min(left, pcm.periodFrames)
                        zeros.withUnsafeBytes { raw in
                            handler(AudioBuffer(format: format, bytes: UnsafeRawBufferPointer(rebasing: raw[0..<(n * format.bytesPerFrame)]),
                                                stride: format.bytesPerFrame, sequence: capture.frames,
                                                timestamp: timestamp - Double(left) / Double(format.sampleRate)))
                        }
                        capture.frames += UInt64(n)
                        left -= n
                    }
                }
                guard skip < n else { return true }  // all of it covered already
                handler(AudioBuffer(format: format, bytes: UnsafeRawBufferPointer(rebasing: capture.buffer[(skip * format.bytesPerFrame)..<(n * format.bytesPerFrame)]),
                                    stride: format.bytesPerFrame, sequence: capture.frames, timestamp: timestamp))
                capture.frames += UInt64(n - skip)
                return true
            } catch {
                // EPIPE: an overrun; ESTRPIPE: a suspend. Anything else (ENODEV, EIO): gone.
                if case .system(let e) = error, e.errno == EPIPE || e.errno == ESTRPIPE {
                    overrunCount.withLock { $0 += 1 }
                    do throws(AudioError) { try pcm.recover(from: error, restart: true); return true } catch {
                        capture.lost = error
                        return false
                    }
                }
                capture.lost = error
                return false
            }
        }
    }
}

/// The capture thread's PCM and what it keeps between periods. Touched by that thread only
/// once started (the owner's `stop` joins it before anything else uses the PCM), which is
/// what makes it safe to send.
final class CapturePCM: @unchecked Sendable {
    private var device: ALSAPCM?
    var pcm: ALSAPCM { device! }
    /// One period, read into and handed on from (outputs copy what they keep).
    let buffer: UnsafeMutableRawBufferPointer
    var clock: AudioClock
    var frames: UInt64 = 0
    var idle = 0.0
    var lost: AudioError?

    init(_ pcm: ALSAPCM) {
        device = pcm
        buffer = .allocate(byteCount: pcm.periodFrames * pcm.format.bytesPerFrame, alignment: 8)
        clock = AudioClock(rate: pcm.format.sampleRate)
    }

    /// Closes the PCM now (a lost device's handle must not outlive the report of its loss:
    /// the session may reopen it at once).
    func close() { device = nil }

    deinit { buffer.deallocate() }
}

/// The mixer, set from the session's queue (one call at a time) while the capture thread
/// reads the PCM, another handle: the two never share ALSA state.
final class UncheckedMixer: @unchecked Sendable {
    let mixer: ALSAMixer
    init(_ mixer: ALSAMixer) { self.mixer = mixer }
}

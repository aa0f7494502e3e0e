// A camera's microphone as an input of its session's graph (AVCaptureDeviceInput of media
// type audio): the device, the connection's mute and gain, and what the state says of it.
// Its buffers come on the device's capture thread; the input applies the mute and a digital
// gain (when the device has no mixer), reads the level, and offers each buffer to the outputs
// its connections reach. Opening, losing and reopening it is the session's (on its queue,
// CaptureSession+Audio.swift): the picture never waits for the sound.

import CameraCore
import SystemSupport

final class AudioInput: Sendable {
    let camera: String
    let device: any AudioDevice
    /// What takes its buffers: the outputs its connections reach, and its encodes.
    let outputs: [any AudioConsumer]
    /// The camera's AAC encode, which movies and RTSP subscribe to.
    let aac: AudioEncodeStream
    /// The camera's Opus encode, which WebRTC viewers subscribe to.
    let opus: AudioEncodeStream
    /// Where a level reading goes (the session's events), at most ten a second.
    private let levels: @Sendable (AudioLevel, _ muted: Bool) -> Void

    private struct State {
        var running = false
        var error: String?
        var format: AudioFormat?
        var muted = false
        /// The capture gain: the mixer's as read back, or the digital one.
        var gainDb = 0.0
        /// Whether the gain is the mixer's (found when the device was last opened).
        var mixer = false
        var level: AudioLevel?
        var meter = LevelMeter(window: 4_800)
        /// Bumped by every start and stop: a loss or a reopening of an older run gives up.
        var number = 0
        var backoff = 0.5
    }
    private let state = Locked(State())

    init(camera: String, device: any AudioDevice, outputs: [any AudioOutput], levels: @escaping @Sendable (AudioLevel, _ muted: Bool) -> Void) {
        self.camera = camera
        self.device = device
        aac = AudioEncodeStream(camera: camera, codec: .aac)
        opus = AudioEncodeStream(camera: camera, codec: .opus)
        self.outputs = outputs + [aac, opus]
        self.levels = levels
    }

    var isMuted: Bool { state.withLock { $0.muted } }

    /// What the state's `audio` says now.
    var report: AudioState {
        state.withLock { s in
            AudioState(device: device.name, running: s.running, muted: s.muted, gainDb: s.gainDb,
                       gainControl: s.mixer ? .mixer : .digital,
                       peakDb: s.running ? s.level?.peakDb : nil, rmsDb: s.running ? s.level?.rmsDb : nil,
                       format: s.running ? s.format : nil, overruns: device.overruns, error: s.error)
        }
    }

    // MARK: - Lifecycle (the session's queue)

    /// A new run of the input: what an older one scheduled gives up.
    func nextRun() -> Int { state.withLock { s in s.number += 1; s.backoff = 0.5; return s.number } }

    func isCurrent(_ run: Int) -> Bool { state.withLock { $0.number == run } }

    /// Opens the device and starts the flow to the outputs.
    func open() throws(AudioError) {
        let format = try device.start { [self] buffer in handle(buffer) }
        // The outputs know the format before the state says the microphone runs: a recording
        // started on that word finds its sound track (the AAC stream's) already described.
        for o in outputs { o.audioStarted(format) }
        let mixer = (try? device.capabilities().mixer) ?? false
        state.withLock { s in
            s.running = true
            s.error = nil
            s.format = format
            s.meter = LevelMeter(window: max(1, format.sampleRate / 10))
            s.level = nil
            if mixer != s.mixer {
                s.mixer = mixer
                // A gain asked before the first open (a saved state's replay) goes to the mixer,
                // which steps and clamps it; a mixer lost keeps no gain digital did not ask for.
                if !mixer { s.gainDb = 0 }
            }
        }
        if mixer, let got = try? device.setMixerGain(state.withLock({ $0.gainDb })) { state.withLock { $0.gainDb = got } }
    }

    /// Stops the device (if it runs) and ends the outputs' flow.
    func close() {
        let was = state.withLock { s -> Bool in defer { s.running = false }; return s.running }
        device.stop()
        if was { for o in outputs { o.audioEnded() } }
    }

    /// The device failed to open or was lost: not running, and why. Answers the delay before
    /// the next attempt (doubling to ten seconds).
    func failed(_ error: AudioError) -> Double {
        let was = state.withLock { s -> Bool in
            defer { s.running = false; s.error = error.description }
            return s.running
        }
        if was { for o in outputs { o.audioEnded() } }
        return state.withLock { s in defer { s.backoff = min(s.backoff * 2, 10) }; return s.backoff }
    }

    // MARK: - Controls (the session's queue)

    func setMuted(_ muted: Bool) { state.withLock { $0.muted = muted } }

    /// Sets the gain: through the mixer (stepped, read back) where the device has one, else
    /// digitally (clamped and stepped to the digital range). Answers what it now is.
    func setGain(_ db: Double) throws(AudioError) -> Double {
        if state.withLock({ $0.mixer }) {
            let got = try device.setMixerGain(db)
            state.withLock { $0.gainDb = got }
            return got
        }
        let range = AudioCapabilities.digitalGain
        let stepped = (min(max(db, range.min), range.max) / range.step).rounded() * range.step
        state.withLock { $0.gainDb = stepped }
        return stepped
    }

    // MARK: - The flow (the device's capture thread)

    private func handle(_ buffer: borrowing AudioBuffer) {
        let (muted, gain) = state.withLock { s in (s.muted, s.mixer ? 0 : s.gainDb) }
        guard muted || gain != 0, buffer.format.encoding == .s16le else { return deliver(buffer) }
        // A disabled connection carries silence (the timeline goes on: a stream's clock and
        // a movie's track keep their time); a digital gain scales with saturation.
        var samples = [Int16](repeating: 0, count: buffer.bytes.count / 2)
        if !muted {
            let factor = pow(10, gain / 20)
            let source = buffer.bytes.bindMemory(to: Int16.self)
            for i in samples.indices {
                samples[i] = Int16(max(-32_768, min(32_767, (Double(source[i]) * factor).rounded())))
            }
        }
        samples.withUnsafeBytes { raw in
            deliver(AudioBuffer(format: buffer.format, bytes: raw, stride: buffer.stride, sequence: buffer.sequence,
                                timestamp: buffer.timestamp))
        }
    }

    private func deliver(_ buffer: borrowing AudioBuffer) {
        let reading = state.withLock { s -> (AudioLevel, Bool)? in
            guard let r = s.meter.add(buffer) else { return nil }
            s.level = r
            return (r, s.muted)
        }
        if let (level, muted) = reading { levels(level, muted) }
        for o in outputs { o.takeAudio(buffer) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
